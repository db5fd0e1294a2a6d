"""LLMU (Yao et al., "Large Language Model Unlearning", 2023; code
github.com/kevinyaobytedance/llm_unlearn; SGA paper appendix A, eq. "LLMU"):

    loss = -eps1 * nll(y_f | x_f)                      gradient ascent on the forget answer
           + eps2 * mean_j nll(y_rand_j | x_f)          learn random answers to the prompt
           + eps3 * KL(p_orig || p_theta)(retain row)    stay close to the original on
                                                        normal data

Defaults eps1 = 0.5, eps2 = 1, eps3 = 1 and 5 random answers per prompt: Yao et al.'s code
(``bad_weight``, ``random_weight``, ``normal_weight``, ``K``), as FLAT's code also uses them.

Where we chose: the random answers are answers (continuations for text data) of retain rows,
drawn once per forget row with a fixed seed (Yao et al. draw from their normal data every
step); the KL is per answer token (as the ``kl`` method), with the frozen starting model as
``p_orig`` (the trainer's reference); the normal data is the retain set.
"""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit, random_answer_units
from sga_core.methods.kl import answer_kl
from sga_core.params import param


@dataclass
class LLMUConfig:
    forget_weight: float = param(0.5, "eps1: weight of gradient ascent on the forget answer.",
                                 min=0.0, max=1000.0)
    random_weight: float = param(1.0, "eps2: weight of learning random answers to the forget "
                                      "prompts.", min=0.0, max=1000.0)
    retain_weight: float = param(1.0, "eps3: weight of the KL to the original model on "
                                      "retain rows.", min=0.0, max=1000.0)
    random_answers: int = param(5, "Random answers (of retain rows) per forget prompt.",
                                min=1, max=64)


class LLMU(Method):
    name = "llmu"
    rank = 65
    title = "LLMU (ascent + random answers + KL on normal data)"
    Config = LLMUConfig
    needs = frozenset({"retain", "reference"})
    needs_logits = True

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return random_answer_units(data, enc, self.cfg.random_answers)

    def unit_losses(self, stats: SeqStats, n_units: int):
        import torch

        c = self.cfg
        rand = self.mean_weights(stats, "normal", c.random_weight)
        w = [-c.forget_weight if r == "forget" else c.retain_weight if r == "retain" else v
             for r, v in zip(stats.roles, rand)]
        values = torch.where(self.role_mask(stats, "retain"), answer_kl(stats), stats.mean_nll)
        return self.weighted_sum(stats, w, n_units, values)
