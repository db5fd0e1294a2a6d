"""Scoring attacked models and the one number per attack (docs/stress-tests.md#recovery).

The forget metrics re-scored here are the two the benchmark reports on the forget set:
the answer's probability ``exp(-nll)`` (TOFU's forget probability, the mean of the
per-row values) and the ROUGE-L recall of the greedy answer against the gold answer.

The *recovery* of an attack is the share of the unlearning gap it closes, on the very rows
it evaluated::

    recovery = (attacked - unlearned) / (original - unlearned)

0: the forgetting held; 1: everything is back (the attacked model scores like the
Original). It is not clipped: below 0 the attack pushed the model further from the
Original, above 1 past it. Where the gap is smaller than :data:`MIN_GAP` the unlearning
removed nothing measurable on those rows and the recovery is undefined (None, with the
reason), never a division by a number near 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

METRICS = ("probability", "rouge")
#: an |original - unlearned| gap below this (both metrics lie in [0, 1]) leaves the recovery
#: undefined
MIN_GAP = 0.01


def score_rows(model, enc, questions: Sequence[str], answers: Sequence[str], device="cpu",
               batch_size: int = 16, max_new_tokens: int = 48, *, progress=None,
               stage: str = "scoring", kind: str = "qa", layers: bool = False) -> list[dict]:
    """Per (question, answer): ``prob`` = exp(-mean answer NLL) and ``tokens`` (the answer's
    per-token probabilities with the top-5 alternatives, as ``eval/tokens.jsonl`` holds
    them: the Token probabilities page shows attacked models from these), from one forward
    pass; with ``max_new_tokens`` > 0 also ``generated`` (greedy) and ``rouge`` (its ROUGE-L
    recall against the answer). ``kind="text"``: each question is a passage's prefix and
    its answer the continuation (cut to the VerbMem tokens, so the end-of-text token the
    encoder appends is not scored), both raw text as the text evaluation has them.
    ``layers``: each token record also holds the attacked model's ``layers`` (the logit
    lens of the same forward, as eval/layers.jsonl holds them; none for a model the lens
    cannot read)."""
    import contextlib
    from functools import partial

    from sga_core.evaluation.inputs import counter, generate_answers
    from sga_core.metrics.rouge import rouge_l
    from sga_core.model.forward import _mean_nll, _records, per_sequence
    from sga_core.model.lens import LensUnsupported, lens_reader

    seqs = scored_seqs(enc, questions, answers, kind)
    with contextlib.ExitStack() as stack:
        lens = None
        if layers:
            with contextlib.suppress(LensUnsupported):
                lens = stack.enter_context(lens_reader(model, enc))

        def both(res):
            recs = partial(_records, enc, 5)(res)
            for rec, lay in zip(recs, lens(res) if lens is not None else []):
                rec["layers"] = {k: lay[k] for k in ("probs", "ranks", "top1")}
            return list(zip(_mean_nll(res), recs))

        scored = per_sequence(model, seqs, enc.pad_id, both, device, batch_size,
                              on_batch=counter(progress, stage, len(seqs)))
    out = [{"prob": _exp(-float(n)), "tokens": rec} for n, rec in scored]
    if max_new_tokens and max_new_tokens > 0:
        gen = generate_answers(model, enc, list(questions), max_new_tokens, kind, device,
                               batch_size, progress=progress, stage=f"{stage}: generating")
        for rec, g, a in zip(out, gen, answers):
            rec["generated"] = g
            rec["rouge"] = float(rouge_l(g, a).recall)
    if progress is not None:
        progress(stage, len(seqs), len(seqs))
    return out


def scored_seqs(enc, questions: Sequence[str], answers: Sequence[str], kind: str = "qa"):
    """The token sequences :func:`score_rows` scores: each QA pair as the evaluation reads
    it, or each text prefix and continuation as raw text (its end-of-text not scored)."""
    if kind == "text":
        return [_without_end(enc.text(q, a, role="eval")) for q, a in zip(questions, answers)]
    return [enc.qa(q, a, role="eval") for q, a in zip(questions, answers)]


def _without_end(seq):
    """``seq`` with its last scored token (the appended end-of-text) no longer scored, as
    the text evaluation's token table drops it (evaluation.text.drop_end_token)."""
    from sga_core.model.encoding import IGNORE

    labels = list(seq.labels)
    scored = [i for i, t in enumerate(labels) if t != IGNORE]
    if len(scored) > 1:
        labels[scored[-1]] = IGNORE
    return type(seq)(seq.input_ids, labels, seq.role, seq.meta)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def mean_of(scores: Sequence[dict], metric: str) -> float | None:
    """The mean of one metric (``prob`` or ``rouge``) over scored rows (None if absent)."""
    key = "prob" if metric == "probability" else metric
    vals = [s[key] for s in scores if isinstance(s.get(key), (int, float))
            and math.isfinite(s[key])]
    return sum(vals) / len(vals) if vals else None


def not_a_number(metric: str, sides) -> str | None:
    """Which model's scores of ``metric`` are not a number (NaN or infinite) on how many
    rows, in words ("not a number (NaN): the attacked model's probability on 3 of 4 rows;
    its weights diverged?"), or None. ``sides``: (name, scores) pairs."""
    key = "prob" if metric == "probability" else metric
    said = []
    for name, rows in sides:
        bad = sum(1 for s in rows if isinstance(s.get(key), float)
                  and not math.isfinite(s[key]))
        if bad:
            said.append(f"the {name} model's {metric} on {bad} of {len(rows)} rows")
    if not said:
        return None
    return "not a number (NaN): " + ", ".join(said) + "; its weights diverged?"


def recovery(attacked: float | None, unlearned: float | None,
             original: float | None) -> tuple[float | None, str | None]:
    """``(recovery, why undefined)``: see the module's docstring."""
    if attacked is None or unlearned is None or original is None:
        missing = [n for n, v in (("attacked", attacked), ("unlearned", unlearned),
                                  ("original", original)) if v is None]
        return None, f"no {' / '.join(missing)} value"
    gap = original - unlearned
    if abs(gap) < MIN_GAP:
        return None, (f"gap ~0: original {original:.3g} vs unlearned {unlearned:.3g} (under "
                      f"{MIN_GAP}); the unlearning removed nothing measurable on these rows")
    return (attacked - unlearned) / gap, None


def case_metrics(scores: Sequence[dict], unlearned: Sequence[dict],
                 original: Sequence[dict] | None) -> dict:
    """Per metric: the attacked, unlearned and original means on the same rows and the
    recovery (with its reason when undefined)."""
    out = {}
    for m in METRICS:
        a, u = mean_of(scores, m), mean_of(unlearned, m)
        o = mean_of(original, m) if original is not None else None
        rec, why = recovery(a, u, o)
        if why and original is None:
            why = "no Original to compare with (give --original)"
        nan = not_a_number(m, (("attacked", scores), ("unlearned", unlearned),
                               ("Original", original or [])))
        if nan:  # a mean over the other rows would hide it; the file would say null
            a, rec, why = (None if "attacked" in nan else a), None, nan
        out[m] = {"attacked": a, "unlearned": u, "original": o, "recovery": rec,
                  "reason": why}
    return out


def _reasons(reasons: list[str]) -> str | None:
    """The cases' distinct reasons in one line: two at most, then how many more (each case
    keeps its own)."""
    if len(reasons) <= 2:
        return "; ".join(reasons) or None
    return f"{reasons[0]}; and {len(reasons) - 1} other cases' reasons alike (each case says)"


def summarise(case_results: Sequence[dict]) -> dict:
    """Per metric over the cases (seeds or templates): the mean attacked value and recovery
    with their Student-t 95% intervals (an interval only with 2 cases or more), the largest
    recovery (the worst case for the forgetting) and how many cases were undefined."""
    from sga_core.report.stats import t_interval

    out = {}
    for m in METRICS:
        attacked = [c[m]["attacked"] for c in case_results]
        recs = [c[m]["recovery"] for c in case_results]
        defined = [r for r in recs if r is not None]
        reasons = sorted({c[m]["reason"] for c in case_results if c[m]["reason"]})
        out[m] = {"attacked": t_interval(attacked).to_dict(),
                  "recovery": t_interval(defined).to_dict(),
                  "max_recovery": max(defined) if defined else None,
                  "unlearned": _mean([c[m]["unlearned"] for c in case_results]),
                  "original": _mean([c[m]["original"] for c in case_results]),
                  "undefined": len(recs) - len(defined),
                  "reason": _reasons(reasons)}
    return out


def _mean(values) -> float | None:
    vals = [v for v in values if isinstance(v, (int, float))]
    return sum(vals) / len(vals) if vals else None
