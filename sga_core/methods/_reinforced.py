"""The "reinforced" model that Task Vector and Who's Harry Potter share (one helper, not a
method: the discovery skips ``_`` modules).

Both fine-tune a copy of the original model on the forget set (NLL descent on the forget
answers; the run's training settings are the reinforcement's: MUSE trains it 5 epochs at
lr 1e-5) and then derive the unlearned model from the original and the reinforced one. The
reinforced weights are saved in ``RUN_DIR/reinforced/`` with ``reinforce.json``, a
fingerprint of what built them (the starting model, the forget rows, the training settings).

Built once: a Task Vector or WHP run first looks, in the same runs folder, for a reinforced
model with the same fingerprint (say a Task Vector run, then a WHP run with the same
settings) and reuses it instead of training: no step runs. The ``reinforced`` setting names
one explicitly (a run folder or run id holding ``reinforced/``, or any model folder).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sga_core.fileio import atomic_dir
from sga_core.methods.base import (
    Method,
    MethodData,
    SeqStats,
    StopTraining,
    Unit,
    forget_with_retain,
)
from sga_core.runs.folder import REINFORCED_DIR

FINGERPRINT = "reinforce.json"
REINFORCED_HELP = ("A reinforced model to reuse: a Task Vector / WHP run (folder or id) or a "
                   "model folder. Empty: reuse one built with the same settings in this runs "
                   "folder, else train it here.")
# training settings that do not change the reinforced weights
_IGNORED = {"log_every", "probe_every", "probe_rows", "probe_count", "save_model", "eval_nll",
            "nll_rows", "diverge_loss"}


def fingerprint(trainer) -> dict:
    """What determines a reinforced model: the starting model, the forget rows, the
    training settings."""
    from sga_core.data import rows_hash
    from sga_core.params import to_dict

    cfg = trainer.cfg
    model = cfg.model
    if Path(model).expanduser().exists():
        model = os.path.abspath(Path(model).expanduser())
    training = {k: v for k, v in to_dict(cfg.training).items() if k not in _IGNORED}
    return {"version": 1, "objective": "forget answer NLL descent", "model": model,
            "task": cfg.data.task, "forget_rows_hash": rows_hash(trainer.data.forget),
            "training": training}


def explicit_source(value: str, runs_dir: Path) -> Path:
    """The reinforced model folder that setting ``reinforced`` names."""
    from sga_core.model.wrapper import is_wrapper

    p = Path(value).expanduser()
    for cand in ([p] if p.is_absolute() else [p, runs_dir / value]):
        if (cand / REINFORCED_DIR / "config.json").exists():
            return cand / REINFORCED_DIR
        if (cand / "config.json").exists() and not is_wrapper(cand):
            return cand
    raise ValueError(f"reinforced: {value!r} is neither a run (folder or id) with a "
                     f"{REINFORCED_DIR}/ model nor a model folder")


def find_same(trainer) -> Path | None:
    """A reinforced model of another run of this runs folder with this run's fingerprint."""
    from sga_core.fileio import read_json

    mine = fingerprint(trainer)
    for d in sorted(trainer.run_dir.parent.iterdir()):
        folder = d / REINFORCED_DIR
        if d.resolve() == trainer.run_dir.resolve() or not (folder / "config.json").exists():
            continue
        try:
            if read_json(folder / FINGERPRINT, default=None) == mine:
                return folder
        except (OSError, ValueError):
            continue
    return None


def link_tree(src: Path, dst: Path) -> None:
    """Hard-link (else copy) the files of ``src`` into a new folder ``dst``: the run keeps
    its reinforced model even if the run it came from is deleted, without a second copy."""
    with atomic_dir(dst) as tmp:
        for f in sorted(Path(src).iterdir()):
            if f.is_file():
                try:
                    os.link(f, tmp / f.name)
                except OSError:
                    shutil.copy2(f, tmp / f.name)


class ReinforcedMethod(Method):
    """Train the reinforced model (or reuse one), then :meth:`apply` the method's rule."""

    sweep_param = "alpha"
    sweep_default = "0.5, 1, 2, 4"

    def __init__(self, cfg):
        super().__init__(cfg)
        self.source: Path | None = None  # a reused reinforced model; None: trained here

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return forget_with_retain(data, enc, with_retain=False)

    def unit_losses(self, stats: SeqStats, n_units: int):
        return self.weighted_sum(stats, [1.0] * len(stats.roles), n_units)  # learn them

    def check_training(self, training, distributed_type: str) -> None:
        if distributed_type in ("DEEPSPEED", "FSDP"):
            raise ValueError(f"{self.name} combines full copies of two models; run it on one "
                             "process or with DDP, not sharded (DeepSpeed, FSDP)")

    def step(self, trainer, batch: list[int], step: int) -> dict | None:
        if step > 0:
            return None
        runs_dir = trainer.run_dir.parent
        value = (self.cfg.reinforced or "").strip()
        self.source = explicit_source(value, runs_dir) if value else find_same(trainer)
        if self.source is None:
            trainer.log("training the reinforced model (forget answers, NLL descent)")
            return None
        trainer.total_steps = 0
        trainer.status(total_steps=0, reinforced_from=str(self.source))
        raise StopTraining("completed", f"reusing the reinforced model {self.source}")

    def finish(self, trainer, state: str) -> bool:
        if state != "completed":
            trainer.log(f"{self.name}: the reinforcement ended {state}; no unlearned model "
                        "is saved")
            return True
        if self.source is None and trainer.cfg.training.save_model:
            trainer.save_model(REINFORCED_DIR)
            if trainer.acc.is_main_process:
                from sga_core.fileio import atomic_write_json

                atomic_write_json(trainer.run_dir / REINFORCED_DIR / FINGERPRINT,
                                  fingerprint(trainer))
        return self.apply(trainer)

    def apply(self, trainer) -> bool:
        """Build the unlearned model from the original and the reinforced one (the trained
        ``trainer.model``, or ``self.source``); True when it saved the model itself."""
        raise NotImplementedError
