"""NPO-RT: NPO with a retain NLL term, under the name of its paper (Zhang et al. 2024, "Negative
Preference Optimization"; SGA paper appendix A, eq. "NPO-RT"): ``npo.py`` with
``retain_weight`` 1 by default (open-unlearning's NPO: gamma = alpha = 1, beta = 0.1)."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.npo import NPO, NPOConfig
from sga_core.params import param


@dataclass
class NPORTConfig(NPOConfig):
    retain_weight: float = param(1.0, "Weight of the retain NLL term.", min=0.0, max=1000.0)


class NPORT(NPO):
    name = "npo-rt"
    rank = 41
    title = "NPO-RT (NPO + retain NLL)"
    Config = NPORTConfig
    needs = frozenset({"reference", "retain"})
