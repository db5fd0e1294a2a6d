"""Membership-inference scores of single texts, as open-unlearning computes them
(``src/evals/metrics/mia/``), turned so that a HIGHER score means MORE likely a training
member: :func:`~sga_core.metrics.muse.auc` then gives open-unlearning's AUC (it labels the
forget texts 0 and the holdout texts 1, and scores so that members score low).

- LOSS (Yeom et al. 2018; ``mia/loss.py``): the text's mean token NLL; member score
  ``-loss``.
- ZLib (Carlini et al. 2021; ``mia/zlib.py``): the mean NLL over the length of the text's
  zlib compression, ``loss / len(zlib.compress(text))``; member score its negation.
- Min-K% (Shi et al. 2024; ``mia/min_k.py``): :func:`~sga_core.metrics.muse.min_k_percent`.
- Min-K%++ (Zhang et al. 2025; ``mia/min_k_plus_plus.py``): each token's log-probability
  normalised by the mean ``mu`` and standard deviation ``sigma`` of the log-probability over
  the vocabulary there, ``(log p(x_t) - mu_t) / sigma_t`` (``sigma^2`` clamped at 1e-6), and
  the mean of the lowest ``k`` of them; member score that mean (OU stores its negation).
- Reference (Carlini et al. 2022; ``mia/reference.py``): the target model's loss minus the
  reference model's on the same row; member score its negation, ``loss_ref - loss``. The
  workbench's reference model is the retain reference (the Retained model).
- GradNorm (Wang et al. 2024; ``mia/gradnorm.py``): the mean over the model's parameters of
  the p-norm (p = 2) of each parameter's gradient of the row's mean token NLL, one row per
  backward pass; member score its negation (members have smaller gradients).

Pure Python on per-text inputs; no torch here.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

from .result import MetricResult, missing, numbers

#: the fraction of lowest tokens Min-K% and Min-K%++ average (MUSE / open-unlearning: 0.4)
MIN_K = 0.4


def mean_loss(logprobs: Sequence[float]) -> float | None:
    """The mean NLL of one text's scored tokens (None if it has none)."""
    lp = numbers(logprobs)
    return -sum(lp) / len(lp) if lp else None


def loss_score(logprobs: Sequence[float]) -> float | None:
    """LOSS: ``-mean NLL`` (higher = member)."""
    loss = mean_loss(logprobs)
    return None if loss is None else -loss


def zlib_score(logprobs: Sequence[float], text: str) -> float | None:
    """ZLib: ``-mean NLL / len(zlib.compress(text))`` (higher = member)."""
    loss = mean_loss(logprobs)
    if loss is None:
        return None
    return -loss / len(zlib.compress(text.encode("utf-8")))


def min_k_plus_plus_score(logprobs: Sequence[float], mu: Sequence[float],
                          var: Sequence[float], k: float = MIN_K) -> float | None:
    """Min-K%++: the mean of the lowest ``max(1, int(n k))`` normalised token log-probs
    ``(log p - mu) / sqrt(max(var, 1e-6))`` (higher = member); None without tokens (OU
    scores such a text 0)."""
    if not (len(logprobs) == len(mu) == len(var)):
        raise ValueError(f"Min-K%++: {len(logprobs)} log-probs, {len(mu)} means and "
                         f"{len(var)} variances")
    z = sorted((lp - m) / math.sqrt(max(v, 1e-6)) for lp, m, v in zip(logprobs, mu, var))
    if not z:
        return None
    n_k = max(1, int(len(z) * k))
    return sum(z[:n_k]) / n_k


def reference_score(loss: float | None, reference_loss: float | None) -> float | None:
    """Reference: ``reference_loss - loss`` (higher = member; OU's score negated)."""
    if loss is None or reference_loss is None:
        return None
    return reference_loss - loss


def gradnorm_score(norm: float | None) -> float | None:
    """GradNorm: ``-norm`` (higher = member; OU's score negated)."""
    return None if norm is None else -norm


def scores(per_text: Sequence[float | None], name: str) -> MetricResult:
    """Per-text member scores as a result (``value`` their mean; None rows skipped)."""
    vals = numbers(per_text)
    if not vals:
        return missing(name, "no scored tokens", list(per_text))
    return MetricResult(name, sum(vals) / len(vals), list(per_text))
