"""CE-U, cross-entropy unlearning (Yang et al., "CE-U: Cross Entropy Unlearning", 2025,
arXiv:2503.01224; open-unlearning's ``CEU``, ``cross_entropy_unlearning_loss``): at every
forget answer token the model learns its own next-token distribution with the true token
removed,

    target_t = softmax(z_t with z_t[y_t] = -inf)      (held constant)
    loss = mean_t[ CE(z_t, target_t) ]

which lowers the true token's probability with a gradient that, unlike gradient ascent's,
vanishes as that probability does. The first ``ignore_first`` answer tokens are left out (the
paper's footnote; open-unlearning's ``ignore_first_n_answer_tokens``, default 1). No retain
data and no reference model.

Where we chose: the mean over tokens is per forget row, and the loss the mean over rows
(docs/spec.md#12-coefficients-and-the-loss); open-unlearning's is one mean over every answer
token of the batch. The two agree on a batch of one row. A row whose answer has no token past
the ignored ones adds 0.
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
    token_positions,
)
from sga_core.params import param


@dataclass
class CEUConfig:
    ignore_first: int = param(1, "Answer tokens at the start of each answer left out of the "
                                 "loss (OU's ignore_first_n_answer_tokens).", min=0, max=64)


class CEU(Method):
    name = "ceu"
    rank = 47
    title = "CE-U (cross-entropy unlearning)"
    Config = CEUConfig
    needs = frozenset()
    needs_logits = True

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return forget_with_retain(data, enc, with_retain=False)

    def unit_losses(self, stats: SeqStats, n_units: int):
        import torch.nn.functional as F

        logits = stats.token_logits.float()
        target = logits.detach().scatter(-1, stats.token_targets.unsqueeze(-1), float("-inf"))
        ce = F.cross_entropy(logits, F.softmax(target, dim=-1), reduction="none")
        kept = token_positions(stats) >= self.cfg.ignore_first
        return self.weighted_sum(stats, [1.0] * len(stats.roles), n_units,
                                 sequence_mean(stats, ce, where=kept))
