"""Task Vector (Ilharco et al. 2023, "Editing Models with Task Arithmetic"; as MUSE's ``tv``
baseline and the SGA paper's appendix A, eq. "Task Vectors"): fine-tune a "reinforced" copy of
the original model on the forget set, then subtract the task vector from the original:

    theta = theta_o - alpha * (theta_reinforced - theta_o)

The run's training settings drive the reinforcement (MUSE: 5 epochs at lr 1e-5); a reinforced
model of another run with the same model, forget rows and training settings (a WHP run, say)
is reused instead of trained again (``sga_core/methods/_reinforced.py``). alpha = 1 is the
paper's equation and MUSE's default. The run folder keeps ``reinforced/`` (for WHP runs to
reuse) and saves the unlearned weights in ``model/`` like any run; its final probes and answer
NLL are measured on the unlearned model.
"""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods._reinforced import REINFORCED_HELP, ReinforcedMethod
from sga_core.params import param


@dataclass
class TaskVectorConfig:
    alpha: float = param(1.0, "Scale of the subtracted task vector.", min=0.0, max=100.0)
    reinforced: str = param("", REINFORCED_HELP)


class TaskVector(ReinforcedMethod):
    name = "task-vector"
    rank = 80
    title = "Task Vector (subtract the forget-set fine-tuning direction)"
    Config = TaskVectorConfig

    def explain(self) -> str:
        return (f"theta = theta_original - {self.cfg.alpha:g} x (theta_reinforced - "
                "theta_original); the training settings fine-tune the reinforced copy")

    def apply(self, trainer) -> bool:
        import torch

        from sga_core.model.loading import load_model

        dtype, a = trainer.cfg.training.dtype, self.cfg.alpha
        model = trainer.acc.unwrap_model(trainer.model)
        original = dict(load_model(trainer.cfg.model, dtype=dtype).named_parameters())
        reinforced = (dict(load_model(str(self.source), dtype=dtype).named_parameters())
                      if self.source is not None else None)
        missing = [n for n, _ in model.named_parameters()
                   if n not in original or (reinforced is not None and n not in reinforced)]
        if missing:
            raise ValueError(f"task vector: parameters {missing[:3]} are not in both the "
                             "original and the reinforced model (adapters? the arithmetic "
                             "needs full weights of the same architecture)")
        with torch.no_grad():
            for name, p in model.named_parameters():
                o = original[name].to(p.device, p.dtype)
                r = p if reinforced is None else reinforced[name].to(p.device, p.dtype)
                p.copy_(o - a * (r - o))
        trainer.log(f"task vector applied: theta_o - {a:g} x (theta_reinforced - theta_o)")
        return False  # the trainer measures and saves the unlearned weights
