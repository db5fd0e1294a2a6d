"""SatImp (Yang et al., "Exploring Criteria of Loss Reweighting to Enhance LLM Unlearning",
ICML 2025; open-unlearning's ``SatImp``, ``compute_satimp_loss``): gradient ascent whose
every forget token is weighted by its *saturation* ``p_t^beta1`` (tokens not yet forgotten
count) times its *importance* ``(1 - p_t)^beta2``,

    loss = forget_weight * mean_t[ -p_t^beta1 (1 - p_t)^beta2 * nll_t ]
           + retain_weight * nll(retain row)

with ``p_t = exp(-nll_t)`` held constant (no gradient through the weights). Defaults are
open-unlearning's SatImp config: beta1 5, beta2 1, forget weight (its ``gamma``) 0.1, retain
weight (its ``alpha``) 1, with its retain NLL.

Where we chose: the mean over tokens is per forget row, and the loss the mean over rows
(docs/spec.md#12-coefficients-and-the-loss); open-unlearning's is one mean over every answer
token of the batch. The two agree on a batch of one row.
"""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit, forget_with_retain
from sga_core.methods.wga import weighted_ascent
from sga_core.params import param


@dataclass
class SatImpConfig:
    beta1: float = param(5.0, "Exponent of the saturation weight p^beta1.", min=0.0,
                         max=100.0)
    beta2: float = param(1.0, "Exponent of the importance weight (1-p)^beta2.", min=0.0,
                         max=100.0)
    forget_weight: float = param(0.1, "Weight of the reweighted ascent term (OU's gamma).",
                                 min=0.0, max=1000.0)
    retain_weight: float = param(1.0, "Weight of the retain NLL term (OU's alpha; 0 = none).",
                                 min=0.0, max=1000.0)


class SatImp(Method):
    name = "satimp"
    rank = 45
    title = "SatImp (saturation x importance reweighted ascent)"
    Config = SatImpConfig
    needs = frozenset({"retain"})
    needs_logits = True

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return forget_with_retain(data, enc, with_retain=self.cfg.retain_weight > 0)

    def unit_losses(self, stats: SeqStats, n_units: int):
        c = self.cfg
        satimp = weighted_ascent(stats, lambda p: p ** c.beta1 * (1 - p).clamp(min=0) ** c.beta2)
        return self.forget_plus_retain(stats, n_units, satimp)
