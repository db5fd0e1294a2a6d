"""Who's Harry Potter (Eldan & Russinovich 2023; the inference-time form of MUSE's WHP baseline
and the SGA paper's appendix A, eq. "WHP"): fine-tune a "reinforced" copy of the original on
the forget set, then answer with the original's next-token distribution pushed away from the
reinforced one:

    logits (default, WHP's eq. 1):  v = v_o - alpha * relu(v_reinforced - v_o)
    probs  (the SGA paper's form):  p = p_o - alpha * (p_reinforced - p_o), floored, renormalised

Nothing is trained into the original: the run's ``model/`` is a model spec (``wrapper.json``,
:mod:`sga_core.model.wrapper`) naming the original and ``reinforced/``, which the evaluation,
the token tables and the probe load like any model. The reinforcement is shared with Task
Vector (``_reinforced.py``): a reinforced model built with the same settings is reused.
alpha = 1 by default (WHP leaves it a tuning knob; sweep it).
"""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods._reinforced import (
    REINFORCED_DIR,
    REINFORCED_HELP,
    ReinforcedMethod,
    link_tree,
)
from sga_core.model.wrapper import COMBINES
from sga_core.params import param
from sga_core.runs.folder import RunFolder


@dataclass
class WHPConfig:
    alpha: float = param(1.0, "How far the answer distribution is pushed away from the "
                              "reinforced model.", min=0.0, max=100.0)
    combine: str = param("logits", "logits: v_o - alpha*relu(v_r - v_o) (WHP's paper); "
                                   "probs: p_o - alpha*(p_r - p_o) (the SGA paper's).",
                         choices=COMBINES)
    reinforced: str = param("", REINFORCED_HELP)


class WHP(ReinforcedMethod):
    name = "whp"
    rank = 81
    title = "WHP (Who's Harry Potter: original pushed away from a reinforced model)"
    Config = WHPConfig

    def explain(self) -> str:
        rule = ("v_o - {a} x relu(v_reinforced - v_o) on the logits" if self.cfg.combine ==
                "logits" else "p_o - {a} x (p_reinforced - p_o) on the probabilities")
        return ("answers from " + rule.format(a=f"{self.cfg.alpha:g}") +
                "; the training settings fine-tune the reinforced copy")

    def apply(self, trainer) -> bool:
        import os
        from pathlib import Path

        from sga_core.model.loading import load_model, resolve_model_path
        from sga_core.model.wrapper import combined_class, save_wrapper

        acc, cfg, t = trainer.acc, trainer.cfg, trainer.cfg.training
        run_reinforced = trainer.run_dir / REINFORCED_DIR
        if self.source is not None and t.save_model and acc.is_main_process:
            link_tree(self.source, run_reinforced)
        acc.wait_for_everyone()
        base = load_model(cfg.model, dtype=t.dtype).to(acc.device).eval()
        reinforced = (acc.unwrap_model(trainer.model) if self.source is None else
                      load_model(str(self.source), dtype=t.dtype).to(acc.device)).eval()
        trainer.model = combined_class()(base, reinforced, self.cfg.alpha, self.cfg.combine)
        if t.save_model and acc.is_main_process:
            model = cfg.model
            if Path(model).expanduser().exists():
                model = os.path.abspath(Path(model).expanduser())
            spec = {"kind": "whp", "version": 1, "base": model,
                    "reinforced": f"../{REINFORCED_DIR}", "alpha": self.cfg.alpha,
                    "combine": self.cfg.combine}
            save_wrapper(RunFolder(trainer.run_dir).model_dir, spec, trainer.tok,
                         resolve_model_path(cfg.model))
        acc.wait_for_everyone()
        trainer.log(f"WHP model: {self.explain()}")
        return True
