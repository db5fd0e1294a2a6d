"""SimNPO (Fan et al., "Simplicity Prevails: Rethinking Negative Preference Optimization for
LLM Unlearning", 2024; code github.com/OPTML-Group/Unlearn-Simple; open-unlearning's
``SimNPO``): NPO without a reference model and with a length-normalised log-likelihood,

    loss = forget_weight * -(2/beta) * logsigmoid(-(beta/|y_f|) * log p(y_f|x) - gamma)
           + retain_weight * nll(retain row)

where ``-(1/|y|) log p(y|x)`` is the answer's mean NLL. Defaults are the TOFU ones of
open-unlearning's SimNPO config (from the authors' TOFU config): beta 4.5, gamma 0,
forget weight 0.125 (their ``npo_coeff``), retain weight 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit, forget_with_retain
from sga_core.params import param


@dataclass
class SimNPOConfig:
    beta: float = param(4.5, "Inverse temperature beta.", min=1e-6, max=100.0)
    gamma: float = param(0.0, "Reward margin gamma (subtracted inside the sigmoid).",
                         min=-100.0, max=100.0)
    forget_weight: float = param(0.125, "Weight of the SimNPO forget term.", min=0.0,
                                 max=1000.0)
    retain_weight: float = param(1.0, "Weight of the retain NLL term (0 = none).", min=0.0,
                                 max=1000.0)


class SimNPO(Method):
    name = "simnpo"
    rank = 42
    title = "SimNPO (length-normalised, reference-free NPO)"
    Config = SimNPOConfig
    needs = frozenset({"retain"})

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return forget_with_retain(data, enc, with_retain=self.cfg.retain_weight > 0)

    def unit_losses(self, stats: SeqStats, n_units: int):
        import torch
        import torch.nn.functional as F

        c = self.cfg
        simnpo = -(2.0 / c.beta) * F.logsigmoid(c.beta * stats.mean_nll - c.gamma)
        values = torch.where(self.role_mask(stats, "forget"), c.forget_weight * simnpo,
                             c.retain_weight * stats.mean_nll)
        return self.weighted_sum(stats, [1.0] * len(stats.roles), n_units, values)
