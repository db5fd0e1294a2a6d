"""Saving and loading a training run's checkpoints with accelerate's own ``save_state`` /
``load_state`` (docs/long-runs.md): the trained model (with LoRA only the adapters), the
optimizer, the learning-rate scheduler, every process's random states, and the trainer's
position (the step, which fixes the place in the data order: docs/spec.md#15-data-order;
the method's state, such as adaptive r; the evaluation-during-training record).

A frozen reference model (KL, NPO, ...) is not saved: it is the starting model, loaded again
from the config. The folders and their pruning are :mod:`sga_core.runs.checkpoints`'.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from sga_core.fileio import atomic_write_json, now_iso, replace_dir
from sga_core.runs import checkpoints as ckpts
from sga_core.runs.folder import CHECKPOINT_INFO

MODEL_FILE = "model.safetensors"  # accelerate's name for the first model's weights


class Position:
    """The trainer's place in the run, saved by accelerate as a registered object."""

    def __init__(self):
        self.state: dict = {}
        self.loaded: dict | None = None

    def state_dict(self) -> dict:
        return dict(self.state)

    def load_state_dict(self, state: dict) -> None:
        self.loaded = dict(state)


def _frozen(model) -> bool:
    return not any(p.requires_grad for p in model.parameters())


def _trainable_names(model) -> set[str]:
    return {n for n, p in model.named_parameters() if p.requires_grad}


class Checkpointer:
    """Saves and loads one trainer's checkpoints (every process calls :meth:`save` and
    :meth:`load`; the main process writes the folders)."""

    def __init__(self, trainer):
        self.tr = trainer
        self.acc = trainer.acc
        self.run_dir = Path(trainer.run_dir)
        self.lora = bool(trainer.cfg.training.lora_rank)
        self.position = Position()
        self.saved_step: int | None = None
        self.acc.register_for_checkpointing(trainer.sched, self.position)
        self.acc.register_save_state_pre_hook(self._before_save)
        self.acc.register_load_state_pre_hook(self._before_load)

    # accelerate's hooks ---------------------------------------------------------------------
    def _before_save(self, models, weights, output_dir) -> None:
        """Keep the trained model's weights only (not a frozen reference); with LoRA, only
        the adapters. ``weights`` lines up with ``models`` where accelerate gathers state
        dicts itself (not DeepSpeed or FSDP, which save their own way)."""
        if len(weights) != len(models):
            return
        for i in reversed(range(len(models))):
            if _frozen(models[i]):
                del weights[i]
            elif self.lora:
                names = _trainable_names(models[i])
                weights[i] = {k: v for k, v in weights[i].items() if k in names}

    def _before_load(self, models, input_dir) -> None:
        """Match :meth:`_before_save`: the reference is not loaded; LoRA adapters are loaded
        here (only they were saved), every adapter weight accounted for."""
        for i in reversed(range(len(models))):
            if _frozen(models[i]):
                del models[i]
        if self.lora and models:
            from safetensors.torch import load_file

            model = models.pop(0)
            state = load_file(os.path.join(input_dir, MODEL_FILE))
            names = _trainable_names(model)
            if set(state) != names:
                raise ValueError(f"checkpoint {input_dir}: its adapter weights do not match "
                                 f"this run's LoRA adapters ({len(state)} saved, "
                                 f"{len(names)} expected)")
            model.load_state_dict(state, strict=False)

    # saving -----------------------------------------------------------------------------------
    def save(self, step: int, state: dict) -> Path | None:
        """Save checkpoint ``step`` (built as ``.step-<step>.tmp`` and renamed in), then keep
        the newest ``training.keep_checkpoints``. Returns its folder (main process)."""
        acc = self.acc
        root = ckpts.checkpoints_dir(self.run_dir)
        tmp = root / ckpts.temp_name(step)
        target = root / ckpts.checkpoint_name(step)
        t0 = time.time()
        acc.wait_for_everyone()
        if acc.is_main_process:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
        acc.wait_for_everyone()
        self.position.state = {**state, "step": step}
        acc.save_state(str(tmp), safe_serialization=True)
        acc.wait_for_everyone()
        if acc.is_main_process:
            atomic_write_json(tmp / CHECKPOINT_INFO, {
                "step": step, "saved_at": now_iso(), "num_processes": acc.num_processes,
                "lora": self.lora, "method": self.tr.cfg.method,
                "seconds": round(time.time() - t0, 3)})
            if target.exists():
                replace_dir(tmp, target)
            else:
                os.rename(tmp, target)
            ckpts.prune(self.run_dir, self.tr.cfg.training.keep_checkpoints)
        acc.wait_for_everyone()
        self.saved_step = step
        return target

    # loading ----------------------------------------------------------------------------------
    def load(self, folder: Path) -> dict:
        """Load a checkpoint into the prepared model, optimizer, scheduler and random states;
        returns the trainer's saved position."""
        info = ckpts.info(folder)
        n = info.get("num_processes")
        if n is not None and n != self.acc.num_processes:
            raise ValueError(f"checkpoint {folder.name} was saved by {n} processes; resume "
                             f"it with the same number (this run has "
                             f"{self.acc.num_processes})")
        if bool(info.get("lora", self.lora)) != self.lora:
            raise ValueError(f"checkpoint {folder.name}: saved with lora_rank "
                             f"{'> 0' if info.get('lora') else '0'}, but this config differs")
        self.acc.load_state(str(folder))
        if self.position.loaded is None:
            raise ValueError(f"checkpoint {folder.name} holds no trainer position")
        self.saved_step = int(self.position.loaded["step"])
        return self.position.loaded
