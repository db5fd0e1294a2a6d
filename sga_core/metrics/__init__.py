"""Unlearning metrics (docs/spec.md#4-metrics), following the public open-unlearning definitions.

Pure metric functions return a :class:`MetricResult` (aggregate ``value``, ``per_sample``
values, and a ``reason`` when the metric cannot be computed). :mod:`.catalog` declares every
metric the evaluation writes (name, kind, label, direction, help, reference, the inputs it
needs, its compute function); :mod:`.context` holds what those compute functions read. The
model-side helpers in :mod:`sga_core.evaluation.inputs` produce the inputs (candidate NLLs,
token log-probs, greedy generations); torch is only imported when those run.
"""

from .muse import (
    auc,
    knowmem,
    min_k_percent,
    min_k_percent_score,
    perplexity,
    perplexity_from_logprobs,
    privleak,
    verbmem,
)
from .result import MetricResult
from .rouge import rouge_l_f1, rouge_l_recall
from .tofu import (
    MODEL_UTILITY_KEYS,
    MODEL_UTILITY_METRICS,
    MODEL_UTILITY_SETS,
    forget_quality,
    harmonic_mean,
    model_utility,
    normalized_probability,
    probability,
    truth_ratio,
    truth_ratio_forget_score,
    truth_ratio_retain_score,
)

__all__ = [
    "MODEL_UTILITY_KEYS",
    "MODEL_UTILITY_METRICS",
    "MODEL_UTILITY_SETS",
    "MetricResult",
    "auc",
    "forget_quality",
    "harmonic_mean",
    "knowmem",
    "min_k_percent",
    "min_k_percent_score",
    "model_utility",
    "normalized_probability",
    "perplexity",
    "perplexity_from_logprobs",
    "privleak",
    "probability",
    "rouge_l_f1",
    "rouge_l_recall",
    "truth_ratio",
    "truth_ratio_forget_score",
    "truth_ratio_retain_score",
    "verbmem",
]
