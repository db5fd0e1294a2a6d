"""The SGA objective (docs/spec.md#1-the-sga-objective) and the per-sequence NLL it is built from.

``sga_coefficients`` is pure Python. The tensor functions import torch lazily so this module
stays cheap to import from the UI (for the coefficient read-out).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import torch

CONVENTIONS = ("label", "objective")


def sga_coefficients(r: float, k: int, convention: str = "label") -> tuple[float, float]:
    """Return ``(c_forget, c_normal)`` for smoothing rate ``r`` over ``k`` label slots.

    ``label`` (default, docs/spec.md#13-conventions): smoothing the GA label ``(-1, 0, ..., 0)``
    gives ``c_forget = -(1 - r + r/K)`` and ``c_normal = -r/K``.
    ``objective`` (the paper's literal equation 3): same ``c_forget``, ``c_normal = +r/K``.
    A negative coefficient pushes that sequence's likelihood down; a positive one learns it.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"K must be an integer >= 1, got {k!r}")
    r = float(r)
    if r != r or r > 1:
        raise ValueError(f"smoothing rate r must be a real number <= 1, got {r!r}")
    k = int(k)
    c_forget = -(1.0 - r + r / k)
    c_normal = -r / k if convention == "label" else r / k
    return c_forget, c_normal


def describe_coefficients(r: float, k: int, convention: str = "label") -> str:
    """The coefficients in words.

    Example: ``forget: push down x1.60 - each normal answer: learn x0.20``.
    """
    c_f, c_n = sga_coefficients(r, k, convention)

    def words(c: float) -> str:
        if c == 0:
            return "ignored (x0)"
        return f"{'push down' if c < 0 else 'learn'} x{abs(c):.2f}"

    text = f"forget: {words(c_f)}"
    if k > 1:
        text += f" - each normal answer: {words(c_n)}"
    return text


def sequence_nll(
    logits: torch.Tensor, labels: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-sequence answer NLL from causal-LM logits.

    ``labels`` use -100 for masked positions (prompt, padding); position t's label is
    predicted from logits at t-1. Returns ``(mean_nll, sum_nll, n_tokens)``, each of shape
    ``[batch]``; ``mean_nll`` is the mean over scored tokens (0 for a sequence with none).
    """
    import torch
    import torch.nn.functional as F

    shift_logits = logits[:, :-1, :]
    shift_labels = labels[:, 1:]
    mask = shift_labels != -100
    safe_labels = shift_labels.masked_fill(~mask, 0)
    token_nll = F.cross_entropy(
        shift_logits.reshape(-1, shift_logits.size(-1)).float(),
        safe_labels.reshape(-1),
        reduction="none",
    ).view(shift_labels.shape)
    token_nll = token_nll * mask
    n_tokens = mask.sum(dim=1)
    sum_nll = token_nll.sum(dim=1)
    mean_nll = sum_nll / n_tokens.clamp(min=1).to(sum_nll.dtype)
    return mean_nll, sum_nll, n_tokens.to(torch.long)


def token_logprobs(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Log-probability of each label token (``[batch, seq-1]``, 0 where masked)."""
    import torch

    shift_logits = logits[:, :-1, :].float()
    shift_labels = labels[:, 1:]
    mask = shift_labels != -100
    logp = torch.log_softmax(shift_logits, dim=-1)
    picked = logp.gather(-1, shift_labels.masked_fill(~mask, 0).unsqueeze(-1)).squeeze(-1)
    return picked * mask
