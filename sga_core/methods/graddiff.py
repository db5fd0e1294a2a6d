"""Gradient difference: ascend on the forget answer, descend on a paired retain row."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit, forget_with_retain
from sga_core.params import param


@dataclass
class GradDiffConfig:
    retain_weight: float = param(1.0, "Weight of the retain NLL term.", min=0.0, max=1000.0)


class GradDiff(Method):
    name = "graddiff"
    rank = 20
    title = "GradDiff (forget ascent + retain NLL; the same method as GD)"
    Config = GradDiffConfig
    needs = frozenset({"retain"})

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return forget_with_retain(data, enc)

    def unit_losses(self, stats: SeqStats, n_units: int):
        w = [-1.0 if r == "forget" else self.cfg.retain_weight for r in stats.roles]
        return self.weighted_sum(stats, w, n_units)
