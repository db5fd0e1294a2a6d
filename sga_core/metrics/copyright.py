"""The copyright task's metrics as FLAT evaluates Harry Potter completions (UCSC-REAL/FLAT,
``evaluate.py``: ``eval_leakage_rate``), which the paper follows (its Table 2, appendix C.2):

- BLEU of each greedy completion against the true continuation, with ``sacrebleu`` on its
  0-100 scale: per row ``sacrebleu.corpus_bleu([completion], [[truth]]).score``, then the
  mean over rows (FLAT's ``mean_bleu``);
- ROUGE-L recall of each completion (stemming on, as FLAT's ``rouge_scorer``), mean over rows;
- the Forget Quality gap (FLAT, Wang et al. 2025, section 5): the distance of the unlearned
  model from the retained model on both numbers,
  ``FQ gap = |BLEU_unlearned - BLEU_retained| + |ROUGE-L_unlearned - ROUGE-L_retained|``
  (each on the scale above; 0 = indistinguishable from the retained model, lower is better).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .result import MetricResult, is_number, mean_or_none, missing, scalar_of


def bleu(predictions: Sequence[str], references: Sequence[str],
         name: str = "bleu") -> MetricResult:
    """Mean per-row sacrebleu BLEU (0-100) of each prediction against its reference."""
    import sacrebleu

    predictions, references = list(predictions), list(references)
    if len(predictions) != len(references):
        raise ValueError(f"{name}: {len(predictions)} predictions but "
                         f"{len(references)} references")
    if not predictions:
        return missing(name, "no completions to score")
    per = [float(sacrebleu.corpus_bleu([p or ""], [[r or ""]]).score)
           for p, r in zip(predictions, references)]
    return MetricResult(name, mean_or_none(per), per)


def fq_gap(bleu_unlearned: float | MetricResult | None,
           rouge_unlearned: float | MetricResult | None,
           retained: Mapping[str, float | None] | None,
           name: str = "fq_gap") -> MetricResult:
    """``|BLEU_u - BLEU_r| + |ROUGE-L_u - ROUGE-L_r|``; ``retained`` holds the retained
    model's ``{"bleu": ..., "rouge": ...}``. ``per_sample`` is ``[BLEU gap, ROUGE-L gap]``."""
    if not retained:
        return missing(name, "no retained-model BLEU / ROUGE-L")
    b_u, r_u = scalar_of(bleu_unlearned), scalar_of(rouge_unlearned)
    b_r, r_r = retained.get("bleu"), retained.get("rouge")
    if b_u is None or r_u is None:
        return missing(name, "no BLEU / ROUGE-L for this model")
    if not (is_number(b_r) and is_number(r_r)):
        return missing(name, "the retained model's BLEU / ROUGE-L are missing")
    gaps = [abs(b_u - float(b_r)), abs(r_u - float(r_r))]
    return MetricResult(name, gaps[0] + gaps[1], gaps)
