"""Mismatch (SGA paper appendix A, eq. "Mismatch", after Yao et al. 2024 and Liu et al. 2024):
learn random answers to the forget prompts while keeping the retain set:

    loss = mean_j nll(y_rand_j | x_f) + retain_weight * nll(retain row)

The random answers are answers (continuations for text data) of retain rows, drawn once per
forget row with a fixed seed, 5 per prompt as in LLMU's random-completion term. The forget
answer is in each unit with weight 0: it is not trained, but its NLL is logged and probed.
"""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit, random_answer_units
from sga_core.params import param


@dataclass
class MismatchConfig:
    retain_weight: float = param(1.0, "Weight of the retain NLL term.", min=0.0, max=1000.0)
    random_answers: int = param(5, "Random answers (of retain rows) per forget prompt.",
                                min=1, max=64)


class Mismatch(Method):
    name = "mismatch"
    rank = 66
    title = "Mismatch (learn random answers + retain NLL)"
    Config = MismatchConfig
    needs = frozenset({"retain"})

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return random_answer_units(data, enc, self.cfg.random_answers)

    def unit_losses(self, stats: SeqStats, n_units: int):
        rand = self.mean_weights(stats, "normal", 1.0)
        w = [self.cfg.retain_weight if r == "retain" else v for r, v in zip(stats.roles, rand)]
        return self.weighted_sum(stats, w, n_units)
