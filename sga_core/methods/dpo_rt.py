"""DPO-RT: DPO with a retain NLL term (SGA paper appendix A, eq. "DPO-RT"; open-unlearning's
DPO with alpha = 1): ``dpo.py`` with ``retain_weight`` 1 by default."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.dpo import DPO, DPOConfig
from sga_core.params import param


@dataclass
class DPORTConfig(DPOConfig):
    retain_weight: float = param(1.0, "Weight of the retain NLL term.", min=0.0, max=1000.0)


class DPORT(DPO):
    name = "dpo-rt"
    rank = 51
    title = "DPO-RT (DPO + retain NLL)"
    Config = DPORTConfig
    needs = frozenset({"reference", "retain"})
