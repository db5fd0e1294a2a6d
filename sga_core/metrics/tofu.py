"""TOFU-style QA metrics (docs/spec.md#4-metrics), following the public open-unlearning definitions.

Every input is a mean answer NLL (``nll``, docs/spec.md#11-per-sequence-nll) per candidate answer,
so ``P(a|q) = exp(-nll(a|q))`` is a length-normalised probability. Functions take plain lists
(or a :class:`MetricResult`, whose ``per_sample`` is used) and return a :class:`MetricResult`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from .result import (
    MetricResult,
    is_number,
    mean_or_none,
    missing,
    numbers,
    safe_exp,
    scalar_of,
    values_of,
)

MODEL_UTILITY_SETS = ("retain", "real_authors", "world_facts")
MODEL_UTILITY_METRICS = ("probability", "rouge", "truth_ratio")
MODEL_UTILITY_KEYS = tuple(f"{s}_{m}" for s in MODEL_UTILITY_SETS for m in MODEL_UTILITY_METRICS)


# ------------------------------------------------------------------------------------------
# Probability


def probability(nll_answer: Sequence[float | None] | MetricResult,
                name: str = "probability") -> MetricResult:
    """Mean of ``P(answer|q) = exp(-nll)``; per sample ``exp(-nll)``."""
    nlls = values_of(nll_answer) or []
    if not nlls:
        return missing(name, "no rows to score")
    per = [safe_exp(-float(x)) if is_number(x) else None for x in nlls]
    value = mean_or_none(per)
    if value is None:
        return missing(name, "no answer NLLs", per)
    return MetricResult(name, value, per)


def _exp(x: float) -> float:
    """``exp(x)`` as numpy computes it: 0.0 on underflow, inf on overflow."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _normalized(nll_a: float, nll_pert: Sequence[float], epsilon: float = 0.0) -> float:
    """``P(a) / (P(a) + sum_j P(pert_j))``: with ``epsilon`` 0 a softmax over ``-nll`` (exact,
    no underflow); else in the probability domain with ``epsilon`` added to the denominator,
    as open-unlearning's ``probability_w_options`` (``correct / (correct + wrong + 1e-10)``)."""
    if epsilon:
        correct = _exp(-float(nll_a))
        return correct / (correct + sum(_exp(-float(x)) for x in nll_pert) + epsilon)
    logs = [-float(nll_a)] + [-float(x) for x in nll_pert]
    top = max(logs)
    weights = [math.exp(v - top) for v in logs]
    return weights[0] / sum(weights)


def normalized_probability(nll_answer: Sequence[float | None],
                           nll_perturbed_lists: Sequence[Sequence[float] | None],
                           name: str = "probability", epsilon: float = 0.0) -> MetricResult:
    """The "real world" probability: per row ``P(a) / (P(a) + sum_j P(perturbed_j))``.

    A row without perturbed answers (or without an answer NLL) gets None and is skipped.
    ``epsilon``: see :func:`_normalized` (0 = exact; 1e-10 = open-unlearning's).
    """
    nll_answer = values_of(nll_answer) or []
    nll_perturbed_lists = list(nll_perturbed_lists)
    if len(nll_answer) != len(nll_perturbed_lists):
        raise ValueError(f"{name}: {len(nll_answer)} answers but "
                         f"{len(nll_perturbed_lists)} perturbed lists")
    if not nll_answer:
        return missing(name, "no rows to score")
    per: list[float | None] = []
    for a, pert in zip(nll_answer, nll_perturbed_lists):
        pert = numbers(pert or [])
        per.append(_normalized(a, pert, epsilon) if is_number(a) and pert else None)
    value = mean_or_none(per)
    if value is None:
        return missing(name, "no perturbed answers", per)
    return MetricResult(name, value, per)


# ------------------------------------------------------------------------------------------
# Truth ratio


def truth_ratio(nll_perturbed_lists: Sequence[Sequence[float] | None],
                nll_paraphrased_or_answer: Sequence[float | None],
                name: str = "truth_ratio", epsilon: float = 0.0) -> MetricResult:
    """Per row ``TR = exp(-mean_j nll(perturbed_j)) / exp(-nll(paraphrased))``.

    The numerator is the geometric mean of the perturbed answers' length-normalised
    probabilities; the denominator uses the paraphrased answer, or the answer itself where
    there is none (the caller passes whichever applies). TR > 1 means the model prefers the
    perturbed (wrong) answers. ``value`` is the plain mean TR; use
    :func:`truth_ratio_forget_score` / :func:`truth_ratio_retain_score` for the aggregates
    of docs/spec.md#42-truth-ratio. Rows lacking perturbed answers or a denominator get None.

    ``epsilon`` 0 computes ``exp(nll_denominator - mean_j nll_perturbed_j)`` in the log domain
    (as TOFU's own ``evaluate_util.py`` does, ``exp(perturb_loss - paraphrased_loss)``), so
    a collapsed model with huge NLLs still gets its exact ratio. ``epsilon`` > 0 follows
    open-unlearning's ``truth_ratio`` (``src/evals/metrics/memorization.py``):
    ``exp(-mean nll_pert) / (exp(-nll_denominator) + 1e-10)`` in the probability domain,
    where a collapsed model's probabilities fall below the epsilon and its ratio tends to 0.
    """
    def ratio(true_nll: float, false_nll: float) -> float:
        if epsilon:
            return _exp(-false_nll) / (_exp(-true_nll) + epsilon)
        return safe_exp(true_nll - false_nll)
    return _per_row(nll_perturbed_lists, nll_paraphrased_or_answer, name, ratio)


def _per_row(nll_perturbed_lists, nll_true, name: str, score) -> MetricResult:
    """``score(true_nll, false_nll)`` of each row, ``false_nll`` the mean of its perturbed
    answers' NLLs; a row lacking either gets None, ``value`` is the mean of the others."""
    perts = list(nll_perturbed_lists)
    denoms = values_of(nll_true) or []
    if len(perts) != len(denoms):
        raise ValueError(f"{name}: {len(perts)} perturbed lists but {len(denoms)} "
                         "paraphrased/answer NLLs")
    if not perts:
        return missing(name, "no rows to score")
    per: list[float | None] = []
    for pert, d in zip(perts, denoms):
        pert = numbers(pert or [])
        per.append(score(float(d), sum(pert) / len(pert)) if pert and is_number(d) else None)
    if all(p is None for p in per):
        reason = ("no perturbed answers" if all(not numbers(p or []) for p in perts)
                  else "no paraphrased or answer NLLs")
        return missing(name, reason, per)
    return MetricResult(name, mean_or_none(per), per)


def truth_ratio_prob_mean(nll_perturbed_lists: Sequence[Sequence[float] | None],
                          nll_paraphrased_or_answer: Sequence[float | None],
                          name: str = "truth_ratio_prob_mean",
                          epsilon: float = 0.0) -> MetricResult:
    """Open-unlearning's ``prob_mean`` truth ratio, "extent of knowledge" in its paper's
    meta-evaluation: per row ``p_true / (p_true + p_false)``, with ``p_true =
    exp(-nll(denominator))`` and ``p_false = exp(-mean_j nll(perturbed_j))`` (the same two
    probabilities as :func:`truth_ratio`), ``value`` their plain mean. 1 = the true answer
    only, 0.5 = no preference, 0 = the false ones only.

    ``epsilon`` 0 computes it in the log domain, ``1 / (1 + exp(nll_true - nll_false))``;
    ``epsilon`` > 0 follows open-unlearning (``memorization.py`` ``truth_ratio`` with
    ``aggregator: prob_mean``): ``p_true / (p_true + p_false + 1e-10)``."""
    def share(true_nll: float, false_nll: float) -> float:
        if epsilon:
            p_true, p_false = _exp(-true_nll), _exp(-false_nll)
            return p_true / (p_true + p_false + epsilon)
        return 1.0 / (1.0 + safe_exp(true_nll - false_nll))
    return _per_row(nll_perturbed_lists, nll_paraphrased_or_answer, name, share)


def truth_ratio_forget_score(trs: Sequence[float | None] | MetricResult,
                             name: str = "truth_ratio_forget",
                             epsilon: float = 0.0) -> MetricResult:
    """Forget-set aggregate ``mean(min(TR, 1/TR))`` (1 = no preference either way); with
    ``epsilon`` open-unlearning's ``closer_to_1_better``: ``mean(min(TR, 1/(TR + 1e-10)))``."""
    vals = numbers(values_of(trs) or [])
    if not vals:
        return missing(name, "no truth ratios")
    per = [0.0 if t <= 0 or math.isinf(t) else min(t, 1.0 / (t + epsilon)) for t in vals]
    return MetricResult(name, sum(per) / len(per), per)


def truth_ratio_retain_score(trs: Sequence[float | None] | MetricResult,
                             name: str = "truth_ratio_retain") -> MetricResult:
    """Retain / real-world aggregate ``mean(max(0, 1 - TR))`` (1 = strongly prefers the truth)."""
    vals = numbers(values_of(trs) or [])
    if not vals:
        return missing(name, "no truth ratios")
    per = [max(0.0, 1.0 - t) for t in vals]
    return MetricResult(name, sum(per) / len(per), per)


# ------------------------------------------------------------------------------------------
# Forget quality and model utility


def forget_quality(tr_unlearned: Sequence[float | None] | MetricResult | None,
                   tr_reference: Sequence[float | None] | MetricResult | None,
                   name: str = "forget_quality") -> MetricResult:
    """``scipy.stats.ks_2samp(TR_forget(unlearned), TR_forget(reference)).pvalue``.

    The reference model is one trained without the forget set (open-unlearning's
    ``retain_model_logs``). Both inputs are raw per-row truth ratios of the forget set.
    ``per_sample`` holds ``[KS statistic]``.
    """
    ref = numbers(values_of(tr_reference) or [])
    if not ref:
        return missing(name, "no retain-reference truth ratios")
    unl = numbers(values_of(tr_unlearned) or [])
    if not unl:
        return missing(name, "no truth ratios for the unlearned model")
    from scipy.stats import ks_2samp

    res = ks_2samp(unl, ref)
    return MetricResult(name, float(res.pvalue), [float(res.statistic)])


def harmonic_mean(values: Sequence[float]) -> float:
    """Harmonic mean of non-negative numbers; 0 when any is 0."""
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("harmonic mean of no values")
    if any(v < 0 for v in vals):
        raise ValueError(f"harmonic mean needs non-negative values, got {vals}")
    if any(v == 0 for v in vals):
        return 0.0
    return len(vals) / sum(1.0 / v for v in vals)


def _component(values: Mapping, set_name: str, metric: str):
    nested = values.get(set_name)
    if isinstance(nested, Mapping):
        return nested.get(metric)
    return values.get(f"{set_name}_{metric}")


def is_utility_set(rows: Sequence[Mapping]) -> bool:
    """Whether a QA set can be a Model Utility component: it has rows, and every row has at
    least one perturbed answer (its truth ratio and normalised probability need them)."""
    return bool(rows) and all(isinstance(r, Mapping) and r.get("perturbed_answer")
                              for r in rows)


def utility_sets(sets: Mapping[str, Sequence[Mapping]]) -> list[str]:
    """The utility sets among extra QA sets (name -> rows), in order: every one that
    :func:`is_utility_set`. The forget and retain sets are never among them."""
    return [n for n, rows in sets.items() if n not in ("forget", "retain")
            and is_utility_set(rows)]


def mu_sets(sets: Mapping[str, Sequence[Mapping]]) -> tuple[str, ...]:
    """The sets Model Utility is taken over: the retain set and every utility set among the
    extra QA sets (name -> rows), or TOFU's real_authors and world_facts when there is none."""
    extra = utility_sets(sets)
    return ("retain", *extra) if extra else MODEL_UTILITY_SETS


def model_utility(values: Mapping[str, float | MetricResult | None],
                  name: str = "model_utility",
                  sets: Sequence[str] = MODEL_UTILITY_SETS) -> MetricResult:
    """Harmonic mean of the numbers {``sets``} x {probability, rouge, truth_ratio}; TOFU's
    9 numbers by default, {retain, real_authors, world_facts} x ... (keys
    ``MODEL_UTILITY_KEYS``, e.g. ``"retain_probability"``, or nested
    ``{"retain": {"probability": ...}}``).

    ``truth_ratio`` here is the retain-style score ``mean(max(0, 1 - TR))``; ``probability``
    is normalised on the real-world sets. Any zero component gives 0; missing (or None/NaN)
    components give None with a reason naming them. ``per_sample`` lists the components in
    ``sets`` x metrics order.
    """
    comps: list[float | None] = []
    absent: list[str] = []
    for s in sets:
        for m in MODEL_UTILITY_METRICS:
            v = scalar_of(_component(values, s, m))
            comps.append(v)
            if v is None:
                absent.append(f"{s}_{m}")
    if absent:
        return missing(name, "missing components: " + ", ".join(absent), comps)
    return MetricResult(name, harmonic_mean(comps), comps)
