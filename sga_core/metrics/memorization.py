"""Token-level memorization of the true answers: exact memorization and extraction strength,
as open-unlearning defines them (``src/evals/metrics/memorization.py``: ``exact_memorization``,
``extraction_strength``; both in its default TOFU and MUSE evaluations).

The input of both is, per row, the list of "hits" over the scored answer tokens: whether the
model's most likely next token (argmax) at that position is the true token. Like
open-unlearning's ``tokenwise_vocab_logprobs``, the prediction of the last scored token (the
answer's EOS here) is left out; :func:`sga_core.evaluation.inputs.answer_token_hits` builds
the lists.
"""

from __future__ import annotations

from collections.abc import Sequence

from .result import MetricResult, mean_or_none, missing


def _rows(token_hits: Sequence[Sequence[bool] | None]) -> list[list[bool] | None]:
    return [None if h is None else [bool(x) for x in h] for h in token_hits]


def exact_memorization(token_hits: Sequence[Sequence[bool] | None],
                       name: str = "exact_memorization") -> MetricResult:
    """Per row the fraction of answer tokens the model predicts exactly (argmax == token):
    ``EM = (1/n) sum_t 1[argmax p(.|x, y_<t) = y_t]``; ``value`` is the mean over rows.
    A row with no scored token gets None (open-unlearning marks it None too)."""
    rows = _rows(token_hits)
    if not rows:
        return missing(name, "no rows to score")
    per = [sum(h) / len(h) if h else None for h in rows]
    value = mean_or_none(per)
    if value is None:
        return missing(name, "no scored answer tokens", per)
    return MetricResult(name, value, per)


def extraction_strength(token_hits: Sequence[Sequence[bool] | None],
                        name: str = "extraction_strength") -> MetricResult:
    """Per row ``ES = 1 - k/n``, with ``k`` the first position from which every remaining
    answer token is predicted exactly (the shortest prefix of the true answer the model
    needs to produce the rest by greedy decoding); ``value`` is the mean over rows.

    As open-unlearning's loop (``for k in range(n): if preds[k:] == labels[k:]: break``),
    ``k`` stops at ``n - 1`` when no suffix matches, so the smallest value is ``1/n``, not 0;
    a row with no scored token scores 0 there, and here too."""
    rows = _rows(token_hits)
    if not rows:
        return missing(name, "no rows to score")
    per: list[float | None] = []
    for h in rows:
        if not h:
            per.append(0.0 if h is not None else None)
            continue
        n = len(h)
        k = n - 1
        for start in range(n):
            if all(h[start:]):
                k = start
                break
        per.append(1.0 - k / n)
    value = mean_or_none(per)
    if value is None:
        return missing(name, "no scored answer tokens", per)
    return MetricResult(name, value, per)
