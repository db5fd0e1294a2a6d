"""MUSE-style text metrics (docs/spec.md#4-metrics): VerbMem, KnowMem, Min-K% membership scores,
ROC-AUC, PrivLeak and perplexity, following the public open-unlearning / MUSE definitions.

Sign convention for Min-K%: :func:`min_k_percent_score` returns the mean of the lowest ``k``
fraction of token log-probabilities, so a HIGHER score means MORE likely a training member.
open-unlearning (after MUSE) stores the negation, ``-mean(lowest k log-probs)``, and calls
``roc_auc_score`` with forget = label 0 and holdout = label 1. Both conventions give the same
AUC: the probability that a forget text looks more like a member than a holdout text. Here
:func:`auc` takes the forget scores as the positives, so pass scores where higher = member.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .result import MetricResult, is_number, missing, numbers, safe_exp, scalar_of, values_of
from .rouge import rouge_l_f1


def verbmem(continuations: Sequence[str], true_continuations: Sequence[str],
            name: str = "verbmem") -> MetricResult:
    """ROUGE-L F1 of each greedy continuation against the true continuation."""
    return rouge_l_f1(continuations, true_continuations, name=name)


def knowmem(answers: Sequence[str], gold_answers: Sequence[str],
            name: str = "knowmem") -> MetricResult:
    """ROUGE-L F1 of each generated answer against the gold answer."""
    return rouge_l_f1(answers, gold_answers, name=name)


def min_k_percent(logprobs: Sequence[float], k: float = 0.4) -> float | None:
    """Mean of the lowest ``max(1, int(n * k))`` token log-probs of one text (None if empty)."""
    lp = sorted(numbers(logprobs))
    if not lp:
        return None
    n_k = max(1, int(len(lp) * k))
    return sum(lp[:n_k]) / n_k


def min_k_percent_score(token_logprobs: Sequence[Sequence[float]], k: float = 0.4,
                        name: str = "min_k_percent") -> MetricResult:
    """Min-K% (k = 40% by default) score per text: higher = more likely a training member.

    ``value`` is the mean score; texts without scored tokens get None.
    """
    if not 0 < k <= 1:
        raise ValueError(f"k must be in (0, 1], got {k!r}")
    rows = list(token_logprobs)
    if not rows:
        return missing(name, "no texts to score")
    per = [min_k_percent(lp, k) for lp in rows]
    vals = numbers(per)
    if not vals:
        return missing(name, "no scored tokens", per)
    return MetricResult(name, sum(vals) / len(vals), per)


def _average_ranks(xs: list[float]) -> list[float]:
    """1-based ranks with ties given their average rank."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        avg = (i + j) / 2 + 1
        for t in range(i, j + 1):
            ranks[order[t]] = avg
        i = j + 1
    return ranks


def auc(scores_forget: Sequence[float] | MetricResult,
        scores_holdout: Sequence[float] | MetricResult, name: str = "auc") -> MetricResult:
    """ROC-AUC separating forget texts (positives) from holdout texts (negatives).

    Mann-Whitney form: ``P(score_forget > score_holdout)``, ties counted 0.5; with Min-K%
    scores (higher = member) 1 means the forget texts look fully memorised, 0.5 means they
    are indistinguishable from unseen text. ``per_sample`` is empty.
    """
    pos = numbers(values_of(scores_forget) or [])
    neg = numbers(values_of(scores_holdout) or [])
    if not pos:
        return missing(name, "no forget scores")
    if not neg:
        return missing(name, "no holdout scores")
    ranks = _average_ranks(pos + neg)
    n_p, n_n = len(pos), len(neg)
    u = sum(ranks[:n_p]) - n_p * (n_p + 1) / 2
    return MetricResult(name, u / (n_p * n_n), [])


def privleak(auc_unlearned: float | MetricResult | None,
             auc_reference: float | MetricResult | None,
             name: str = "privleak") -> MetricResult:
    """PrivLeak in MUSE's convention: ``(A_unlearned - A_reference) / A_reference * 100`` with
    ``A = 1 - AUC`` (docs/spec.md#46-text-metrics-muse-style, corrected 2026-11-22).

    ``AUC`` here is :func:`auc` of Min-K% scores (1 = the forget texts look memorised);
    MUSE's own AUC (``metrics/privleak.py``: forget labelled 0, holdout 1, score ``-Min-K``)
    is ``1 - AUC``, and open-unlearning's ``privleak`` (``src/evals/metrics/privacy.py``)
    turns its AUC into MUSE's the same way. So a model that memorised the forget set
    (AUC near 1) scores near -100, the retrained reference 0, over-unlearning is positive.
    open-unlearning adds 1e-10 to the denominator; here a reference AUC of 1 (``A = 0``)
    yields None with a reason instead.
    """
    ref = scalar_of(auc_reference)
    if ref is None:
        return missing(name, "no retain-reference AUC")
    u = scalar_of(auc_unlearned)
    if u is None:
        return missing(name, "no AUC for the unlearned model")
    a_u, a_ref = 1.0 - u, 1.0 - ref
    if a_ref == 0:
        return missing(name, "the reference AUC is 1 (1 - AUC = 0: PrivLeak is undefined)")
    return MetricResult(name, (a_u - a_ref) / a_ref * 100.0, [])


def perplexity(nlls: Sequence[float | None], token_counts: Sequence[int],
               name: str = "perplexity") -> MetricResult:
    """Token-weighted perplexity ``exp(sum_i n_i * nll_i / sum_i n_i)``.

    ``nlls`` are mean per-token NLLs of each text, ``token_counts`` the scored tokens of each;
    ``per_sample`` is each text's own perplexity ``exp(nll_i)`` (None for empty texts).
    """
    nlls, counts = list(nlls), list(token_counts)
    if len(nlls) != len(counts):
        raise ValueError(f"{name}: {len(nlls)} NLLs but {len(counts)} token counts")
    per: list[float | None] = []
    total = 0.0
    n = 0
    for x, c in zip(nlls, counts):
        if not is_number(x) or not c or c <= 0:
            per.append(None)
            continue
        per.append(safe_exp(float(x)))
        total += float(x) * c
        n += int(c)
    if n == 0:
        return missing(name, "no scored tokens", per)
    return MetricResult(name, safe_exp(total / n), per)


def perplexity_from_logprobs(token_logprobs: Sequence[Sequence[float]],
                             name: str = "perplexity") -> MetricResult:
    """:func:`perplexity` from per-token log-probs of each text."""
    nlls, counts = [], []
    for lp in token_logprobs:
        vals = numbers(lp)
        counts.append(len(vals))
        nlls.append(-sum(vals) / len(vals) if vals else math.nan)
    return perplexity(nlls, counts, name=name)
