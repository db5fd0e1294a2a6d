"""Gradient ascent: maximize the forget answer's NLL (SGA with r = 0)."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit, forget_with_retain


@dataclass
class GAConfig:
    pass


class GA(Method):
    name = "ga"
    rank = 10
    title = "GA (gradient ascent)"
    Config = GAConfig

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return forget_with_retain(data, enc, with_retain=False)

    def unit_losses(self, stats: SeqStats, n_units: int):
        return self.weighted_sum(stats, [-1.0] * len(stats.roles), n_units)
