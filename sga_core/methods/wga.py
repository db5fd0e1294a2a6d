"""WGA, weighted gradient ascent (Wang et al., "Rethinking LLM Unlearning Objectives: A
Gradient Perspective and Go Beyond", ICLR 2025; open-unlearning's ``WGA``,
``compute_wga_loss``): gradient ascent whose every forget token is weighted by its own
probability, so tokens the model has already forgotten stop pulling,

    loss = forget_weight * mean_t[ -p_t^beta * nll_t ]  +  retain_weight * nll(retain row)

with ``p_t = exp(-nll_t)`` held constant (no gradient through the weight). GA is ``beta = 0``.
Defaults are open-unlearning's WGA config: beta 1, forget weight (its ``gamma``) 1, retain
weight (its ``alpha``) 1, with its retain NLL.

Where we chose: the mean over tokens is per forget row, and the loss the mean over rows (the
workbench's rule, docs/spec.md#12-coefficients-and-the-loss); open-unlearning's is one mean
over every answer token of the batch. The two agree on a batch of one row.
"""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import (
    Method,
    MethodData,
    SeqStats,
    Unit,
    forget_with_retain,
    sequence_mean,
    token_nll,
)
from sga_core.params import param


@dataclass
class WGAConfig:
    beta: float = param(1.0, "Exponent beta of the token weight p^beta (0 = plain GA).",
                        min=0.0, max=100.0)
    forget_weight: float = param(1.0, "Weight of the weighted ascent term (OU's gamma).",
                                 min=0.0, max=1000.0)
    retain_weight: float = param(1.0, "Weight of the retain NLL term (OU's alpha; 0 = none).",
                                 min=0.0, max=1000.0)


class WGA(Method):
    name = "wga"
    rank = 44
    title = "WGA (weighted gradient ascent)"
    Config = WGAConfig
    needs = frozenset({"retain"})
    needs_logits = True

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return forget_with_retain(data, enc, with_retain=self.cfg.retain_weight > 0)

    def unit_losses(self, stats: SeqStats, n_units: int):
        c = self.cfg
        wga = weighted_ascent(stats, lambda p: p ** c.beta)
        return self.forget_plus_retain(stats, n_units, wga)


def weighted_ascent(stats: SeqStats, weight):
    """Per sequence: ``mean_t[-w_t * nll_t]`` over its answer tokens, ``w_t = weight(p_t)``
    of each token's probability ``p_t``, held constant (WGA, SatImp)."""
    import torch

    nll = token_nll(stats)
    return sequence_mean(stats, -weight(torch.exp(-nll).detach()) * nll)
