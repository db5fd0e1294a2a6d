"""Plain fine-tuning (answer NLL descent), used by ``prepare`` to build the original model
(forget + retain rows) and the retain reference (retain rows only)."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit
from sga_core.params import param


@dataclass
class FinetuneConfig:
    include_forget: bool = param(True, "Train on the forget rows as well as the retain rows.")


class Finetune(Method):
    name = "finetune"
    rank = 100
    title = "Fine-tune (learn the data)"
    Config = FinetuneConfig
    unlearning = False

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        rows = (list(data.forget) if self.cfg.include_forget else []) + list(data.retain)
        if not rows:
            raise ValueError("nothing to fine-tune on: no rows")
        return [Unit(i, [enc.row(row, data.kind, role="train", row_index=i)])
                for i, row in enumerate(rows)]

    @classmethod
    def curve_names(cls, args: dict) -> dict[str, str]:
        # the trainer logs the NLL of the rows a unit learns under forget_nll
        both = args.get("include_forget", True)
        return {"forget_nll": "train NLL (forget + retain rows)" if both else
                "retain NLL (the retain rows it learns)"}

    @classmethod
    def log_names(cls, args: dict) -> dict[str, str]:
        # named by the rows measured: the retain reference learns only retain rows
        return {"forget_nll": "train_nll" if args.get("include_forget", True)
                else "retain_nll"}

    def unit_losses(self, stats: SeqStats, n_units: int):
        return self.weighted_sum(stats, [1.0] * len(stats.roles), n_units)
