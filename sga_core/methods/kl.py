"""KL minimization: ascend on the forget answer, keep the retain rows' next-token
distributions close to a frozen copy of the starting model (KL(ref || current))."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import (
    Method,
    MethodData,
    SeqStats,
    Unit,
    forget_with_retain,
    sequence_mean,
)
from sga_core.params import param


@dataclass
class KLConfig:
    retain_weight: float = param(1.0, "Weight of the retain KL term.", min=0.0, max=1000.0)


class KL(Method):
    name = "kl"
    rank = 30
    title = "KL (forget ascent + retain KL to the original)"
    Config = KLConfig
    needs = frozenset({"retain", "reference"})
    needs_logits = True

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return forget_with_retain(data, enc)

    def unit_losses(self, stats: SeqStats, n_units: int):
        import torch

        kl_seq = answer_kl(stats)
        forget = self.role_mask(stats, "forget")
        values = torch.where(forget, -stats.mean_nll, self.cfg.retain_weight * kl_seq)
        return self.weighted_sum(stats, [1.0] * len(stats.roles), n_units, values)


def answer_kl(stats: SeqStats):
    """Per sequence: the mean over its answer tokens of KL(ref || current) between the
    next-token distributions, at the scored (label) positions only (``stats.token_logits``
    and ``stats.ref.token_logits``: methods using it set ``needs_logits = True``)."""
    import torch

    logp = torch.log_softmax(stats.token_logits.float(), dim=-1)
    ref_logp = torch.log_softmax(stats.ref.token_logits.float(), dim=-1)
    kl_tok = (ref_logp.exp() * (ref_logp - logp)).sum(-1)  # KL(ref || current), [N]
    return sequence_mean(stats, kl_tok)
