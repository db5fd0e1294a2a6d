"""The rows a stress test scores (docs/stress-tests.md#text-data): QA pairs as they are, or
text passages as the text evaluation's VerbMem and token table see them.

A text forget row becomes ``{"question": prefix, "answer": continuation, "text": passage}``:
the prefix is the row's ``prompt`` (else its first 15 words), the continuation the first
``n_tokens`` tokens (the protocol's VerbMem length) of what follows, exactly the rows of the
evaluation's token table (:func:`sga_core.evaluation.text.token_rows`), so an attacked
model's tokens line up with the run's own on Token probabilities. Relearning trains on the
whole passage. A text retain row keeps only its passage (benign relearning trains on it).
"""

from __future__ import annotations


def load_rows(forget, retain) -> tuple[list[dict], list[dict], str]:
    """``(forget rows, retain rows, kind)`` from files or lists; both of one kind, or a
    one-line EvalError saying which is which."""
    from sga_core.evaluation.common import EvalError
    from sga_core.evaluation.rows import load_rows as eval_load_rows

    forget_rows, _, kind = eval_load_rows(forget, "auto")
    if not forget_rows:
        raise EvalError("no forget rows to stress-test")
    retain_rows, _, retain_kind = eval_load_rows(retain, "auto") if retain is not None \
        else ([], None, kind)
    if retain_rows and retain_kind != kind:
        raise EvalError(f"retain data is {retain_kind} but the forget data is {kind}: a "
                        "stress test needs both of one kind")
    return forget_rows, retain_rows, kind


def text_rows(tok, rows: list[dict], n_tokens: int) -> list[dict]:
    """Text forget rows as a stress test scores them (see the module's docstring)."""
    from sga_core.evaluation.text import full_text, token_rows

    return [{"question": t["prompt"], "answer": t["continuation"], "text": full_text(r)}
            for t, r in zip(token_rows(tok, rows, n_tokens), rows)]


def text_retain(rows: list[dict]) -> list[dict]:
    from sga_core.evaluation.text import full_text

    return [{"text": full_text(r)} for r in rows]
