"""Gradient ascent: maximize the forget answer's NLL (SGA with r = 0)."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods import register
from sga_core.methods.base import Method, MethodData, SeqStats, Unit


@dataclass
class GAConfig:
    pass


@register
class GA(Method):
    name = "ga"
    title = "GA (gradient ascent)"
    Config = GAConfig

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return [Unit(i, [enc.row(row, data.kind, role="forget", forget_index=i)])
                for i, row in enumerate(data.forget)]

    def unit_losses(self, stats: SeqStats, n_units: int):
        return self.weighted_sum(stats, [-1.0] * len(stats.roles), n_units)
