"""Utility numbers from lm-evaluation-harness results (pure: the results come in as dicts).

A task's result is the dict ``simple_evaluate`` reports under ``results[task]`` (keys such as
``"acc,none"`` or ``"word_perplexity,none"``), or ``{"error": why}`` when the task could not
run (no copy of its dataset offline, an unknown task name). FLAT (``evaluate.py``) reports
Wikitext's word perplexity (``eval_ppl``) and the mean ``acc`` of nine zero-shot tasks
(``eval_few_shots`` + ``get_average_acc``, which skips entries without an ``acc``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from .result import MetricResult, missing

# the number a task contributes, by preference: perplexities for rolling-loglikelihood tasks,
# accuracies for multiple choice
PREFERRED = ("word_perplexity", "acc", "acc_norm", "exact_match", "perplexity", "f1", "mcc")


def _number(result: Mapping, metric: str) -> float | None:
    for key, value in result.items():
        if key.split(",", 1)[0] == metric and isinstance(value, (int, float)) \
                and not isinstance(value, bool) and math.isfinite(float(value)):
            return float(value)
    return None


def task_value(name: str, result: Mapping | None) -> MetricResult:
    """The headline number of one task's result (the first of :data:`PREFERRED` it has);
    ``per_sample`` is empty. A missing or failed task gives None with its reason."""
    if not result:
        return missing(name, "the lm-eval task did not run")
    if result.get("error"):
        return missing(name, str(result["error"]))
    for metric in PREFERRED:
        v = _number(result, metric)
        if v is not None:
            return MetricResult(name, v, [])
    return missing(name, "the lm-eval task reported no " + " / ".join(PREFERRED))


def mean_accuracy(name: str, results: Mapping[str, Mapping], tasks: Sequence[str]
                  ) -> MetricResult:
    """Mean ``acc`` over ``tasks`` (FLAT's average zero-shot accuracy); ``per_sample`` lists
    each task's accuracy (None where it did not run). None with the reasons when no task ran."""
    if not tasks:
        return missing(name, "no zero-shot tasks")
    per: list[float | None] = []
    why = []
    for task in tasks:
        res = results.get(task) or {}
        acc = None if res.get("error") else _number(res, "acc")
        per.append(acc)
        if acc is None:
            why.append(f"{task}: {res.get('error') or 'no accuracy'}")
    vals = [v for v in per if v is not None]
    if not vals:
        return missing(name, "; ".join(why), per)
    reason = f"mean over {len(vals)} of {len(tasks)} tasks ({'; '.join(why)})" if why else None
    return MetricResult(name, sum(vals) / len(vals), per, reason)
