"""ROUGE-L via the ``rouge-score`` package: stemming on, as TOFU, open-unlearning and FLAT
compute it; MUSE's own ``metrics/logger.py`` scores without stemming (``stemmer=False``)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from .result import MetricResult, mean_or_none, missing


@lru_cache(maxsize=2)
def _scorer(stemmer: bool = True):
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=stemmer)


def rouge_l(prediction: str, reference: str, stemmer: bool = True):
    """The ``rouge_score`` Score (precision, recall, fmeasure) of one prediction."""
    return _scorer(bool(stemmer)).score(reference or "", prediction or "")["rougeL"]


def _rouge(predictions: Sequence[str], references: Sequence[str], field: str,
           name: str, stemmer: bool = True) -> MetricResult:
    predictions, references = list(predictions), list(references)
    if len(predictions) != len(references):
        raise ValueError(
            f"{name}: {len(predictions)} predictions but {len(references)} references")
    if not predictions:
        return missing(name, "no predictions to score")
    per = [float(getattr(rouge_l(p, r, stemmer), field))
           for p, r in zip(predictions, references)]
    return MetricResult(name, mean_or_none(per), per)


def rouge_l_recall(predictions: Sequence[str], references: Sequence[str],
                   name: str = "rouge_l_recall", stemmer: bool = True) -> MetricResult:
    """ROUGE-L recall of each prediction against its reference (LCS / reference length)."""
    return _rouge(predictions, references, "recall", name, stemmer)


def rouge_l_f1(predictions: Sequence[str], references: Sequence[str],
               name: str = "rouge_l_f1", stemmer: bool = True) -> MetricResult:
    """ROUGE-L F1 of each prediction against its reference."""
    return _rouge(predictions, references, "fmeasure", name, stemmer)
