"""UNDIAL, self-distillation with adjusted logits (Dong et al., "UNDIAL: Self-Distillation
with Adjusted Logits for Robust Unlearning in Large Language Models", NAACL 2025;
open-unlearning's ``UNDIAL``, ``compute_undial_loss``): the model learns, at every forget
answer token, the frozen original's next-token distribution with the true token's logit
lowered by ``beta``,

    target_t = softmax(z_ref,t - beta * onehot(y_t))
    loss = forget_weight * mean_t[ CE(z_t, target_t) ]  +  retain_weight * nll(retain row)

so the true token loses probability while the rest of the distribution keeps its shape.
Defaults are open-unlearning's UNDIAL config: beta 10, forget weight (its ``gamma``) 1,
retain weight (its ``alpha``) 0; its learning rate is 1e-4.

Where we chose: the mean is over the forget answer's tokens, per row, and the loss the mean
over rows (docs/spec.md#12-coefficients-and-the-loss). open-unlearning's mean runs over every
position of the padded batch, prompt and padding included (where a label of -100 lowers the
logit of token ``V - 100``); on the answer tokens the two are the same quantity.
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
)
from sga_core.params import param


@dataclass
class UNDIALConfig:
    beta: float = param(10.0, "How far the true token's logit is lowered in the target.",
                        min=0.0, max=1000.0)
    forget_weight: float = param(1.0, "Weight of the distillation term (OU's gamma).",
                                 min=0.0, max=1000.0)
    retain_weight: float = param(0.0, "Weight of a retain NLL term (OU's alpha; 0 = none; "
                                      "needs retain data when > 0).", min=0.0, max=1000.0)


class UNDIAL(Method):
    name = "undial"
    rank = 46
    title = "UNDIAL (self-distillation with adjusted logits)"
    Config = UNDIALConfig
    needs = frozenset({"reference"})
    needs_logits = True

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return forget_with_retain(data, enc, with_retain=self.cfg.retain_weight > 0)

    def unit_losses(self, stats: SeqStats, n_units: int):
        import torch
        import torch.nn.functional as F

        c = self.cfg
        teacher = stats.ref.token_logits.float().detach()
        teacher = teacher.scatter_add(
            -1, stats.token_targets.unsqueeze(-1),
            torch.full_like(teacher[:, :1], -c.beta))
        target = F.softmax(teacher, dim=-1)
        ce = F.cross_entropy(stats.token_logits.float(), target, reduction="none")
        return self.forget_plus_retain(stats, n_units, sequence_mean(stats, ce))
