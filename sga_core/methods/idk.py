"""IDK fine-tuning: learn "I don't know"-style answers to the forget prompts (plus an optional
retain NLL term). Templates come from ``assets/idk_templates.json``."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit, paired_retain
from sga_core.params import param


@dataclass
class IDKConfig:
    retain_weight: float = param(1.0, "Weight of a retain NLL term (0 = none).", min=0.0,
                                 max=1000.0)


class IDK(Method):
    name = "idk"
    rank = 60
    title = "IDK (fine-tune on \"I don't know\")"
    Config = IDKConfig

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        if not data.idk_templates:
            raise ValueError("no 'I don't know' templates available")
        if self.cfg.retain_weight > 0 and not data.retain:
            raise ValueError("IDK with retain_weight > 0 needs retain data")
        units = []
        for i, row in enumerate(data.forget):
            idk = data.idk_templates[i % len(data.idk_templates)]
            seqs = [enc.row(row, data.kind, answer=idk, role="idk", forget_index=i)]
            if self.cfg.retain_weight > 0:
                seqs.append(paired_retain(data, enc, i))
            units.append(Unit(i, seqs))
        return units

    def unit_losses(self, stats: SeqStats, n_units: int):
        w = [1.0 if r == "idk" else self.cfg.retain_weight for r in stats.roles]
        return self.weighted_sum(stats, w, n_units)
