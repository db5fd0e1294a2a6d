"""ROUGE-L via the ``rouge-score`` package (stemming on), as open-unlearning computes it."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from .result import MetricResult, mean_or_none, missing


@lru_cache(maxsize=1)
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(prediction: str, reference: str):
    """The ``rouge_score`` Score (precision, recall, fmeasure) of one prediction."""
    return _scorer().score(reference or "", prediction or "")["rougeL"]


def _rouge(predictions: Sequence[str], references: Sequence[str], field: str,
           name: str) -> MetricResult:
    predictions, references = list(predictions), list(references)
    if len(predictions) != len(references):
        raise ValueError(
            f"{name}: {len(predictions)} predictions but {len(references)} references")
    if not predictions:
        return missing(name, "no predictions to score")
    per = [float(getattr(rouge_l(p, r), field)) for p, r in zip(predictions, references)]
    return MetricResult(name, mean_or_none(per), per)


def rouge_l_recall(predictions: Sequence[str], references: Sequence[str],
                   name: str = "rouge_l_recall") -> MetricResult:
    """ROUGE-L recall of each prediction against its reference (LCS / reference length)."""
    return _rouge(predictions, references, "recall", name)


def rouge_l_f1(predictions: Sequence[str], references: Sequence[str],
               name: str = "rouge_l_f1") -> MetricResult:
    """ROUGE-L F1 of each prediction against its reference."""
    return _rouge(predictions, references, "fmeasure", name)
