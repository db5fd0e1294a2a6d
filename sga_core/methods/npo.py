"""Negative Preference Optimization (Zhang et al. 2024), as in open-unlearning:
``-(2/beta) * logsigmoid(-beta * (log p(y_f) - log p_ref(y_f)))`` on the forget answer (sequence
log-likelihoods), plus an optional retain NLL term."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit, forget_with_retain
from sga_core.params import param


@dataclass
class NPOConfig:
    beta: float = param(0.1, "Inverse temperature beta.", min=1e-6, max=100.0)
    retain_weight: float = param(0.0, "Weight of a retain NLL term (0 = plain NPO; needs "
                                      "retain data when > 0).", min=0.0, max=1000.0)


class NPO(Method):
    name = "npo"
    rank = 40
    title = "NPO (negative preference optimization)"
    Config = NPOConfig
    needs = frozenset({"reference"})

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return forget_with_retain(data, enc, with_retain=self.cfg.retain_weight > 0)

    def unit_losses(self, stats: SeqStats, n_units: int):
        import torch
        import torch.nn.functional as F

        b = self.cfg.beta
        log_ratio = -(stats.sum_nll - stats.ref.sum_nll)  # log p - log p_ref
        npo = -(2.0 / b) * F.logsigmoid(-b * log_ratio)
        forget = self.role_mask(stats, "forget")
        values = torch.where(forget, npo, self.cfg.retain_weight * stats.mean_nll)
        return self.weighted_sum(stats, [1.0] * len(stats.roles), n_units, values)
