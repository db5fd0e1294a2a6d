"""Saving and loading a training run's checkpoints (docs/long-runs.md): the trained weights
(with LoRA only the adapters), the optimizer, the learning-rate scheduler, every process's
random states, and the trainer's position (the step, which fixes the place in the data order:
docs/spec.md#15-data-order; the method's state, such as adaptive r; the
evaluation-during-training record).

Nothing in a checkpoint is a Python pickle (format 2, :data:`sga_core.runs.checkpoints.FORMAT`):
tensors are safetensors, everything else JSON, so a run folder from elsewhere cannot run code
when it is resumed. Every part is checked before any of it is used
(:func:`sga_core.runs.checkpoints.check_resume`, then the shapes here), and a checkpoint that
does not fit is refused with the file at fault named.

Under DeepSpeed or FSDP, whose weights and optimizer are sharded, those two are saved and
loaded by accelerate's ``save_state``/``load_state`` in the backend's own format, which
uses pickle for its optimizer files: resume such runs only from folders you trust. The
position, scheduler and random states are this module's safe files there too.

A frozen reference model (KL, NPO, ...) is not saved: it is the starting model, loaded again
from the config. The folders and their pruning are :mod:`sga_core.runs.checkpoints`'.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import time
from pathlib import Path

from sga_core.fileio import atomic_write_json, now_iso, replace_dir
from sga_core.runs import checkpoints as ckpts
from sga_core.runs.checkpoints import ResumeError
from sga_core.runs.folder import CHECKPOINT_INFO

SHARDED = ("DEEPSPEED", "FSDP", "MEGATRON_LM")


def _trained(model) -> dict:
    """The trained parameters of the (unwrapped) model, by name: all those the optimizer
    updates (with LoRA, the adapters). Tied weights appear once."""
    return {n: p for n, p in model.named_parameters() if p.requires_grad}


# --- random states, as numbers ------------------------------------------------------------------

def rng_state() -> tuple[dict, dict]:
    """This process's random states as (tensors, metadata) for a safetensors file."""
    import numpy as np
    import torch

    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    tensors = {"torch": torch.get_rng_state(),
               "python": torch.tensor(list(internal), dtype=torch.int64),
               "numpy": torch.from_numpy(np.asarray(keys, dtype=np.int64))}
    if torch.cuda.is_available():
        for i, state in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"cuda.{i}"] = state
    meta = {"python_version": version, "python_gauss_next": gauss, "numpy_kind": kind,
            "numpy_pos": int(pos), "numpy_has_gauss": int(has_gauss),
            "numpy_cached_gaussian": float(cached)}
    return tensors, {"rng": json.dumps(meta)}


def set_rng_state(path: Path, where: str) -> None:
    """Put back the random states saved by :func:`rng_state`; every value is checked first
    (ResumeError naming the file when one is missing or not a random state)."""
    import numpy as np
    import torch
    from safetensors import safe_open

    try:
        with safe_open(str(path), "pt", device="cpu") as fh:
            meta = json.loads((fh.metadata() or {}).get("rng") or "null")
            tensors = {k: fh.get_tensor(k) for k in fh.keys()}
    except Exception as exc:  # safetensors raises its own error types
        raise ResumeError(f"{where}: cannot be read ({exc})") from None
    if not isinstance(meta, dict):
        raise ResumeError(f"{where}: holds no Python or NumPy random state")
    t, py, nump = tensors.get("torch"), tensors.get("python"), tensors.get("numpy")
    want = torch.get_rng_state()
    if t is None or t.dtype != torch.uint8 or t.shape != want.shape:
        raise ResumeError(f"{where}: torch's random state is missing or not one")
    if py is None or py.dtype != torch.int64 or py.shape != (625,) or \
            not (0 <= int(py.min()) and int(py.max()) < 2**32) or int(py[-1]) > 624:
        raise ResumeError(f"{where}: Python's random state is missing or not one")
    if nump is None or nump.dtype != torch.int64 or nump.shape != (624,) or \
            not (0 <= int(nump.min()) and int(nump.max()) < 2**32):
        raise ResumeError(f"{where}: NumPy's random state is missing or not one")
    gauss = meta.get("python_gauss_next")
    if meta.get("python_version") != 3 or not (gauss is None or isinstance(gauss, float)) \
            or meta.get("numpy_kind") != "MT19937" \
            or not isinstance(meta.get("numpy_pos"), int) \
            or not 0 <= meta["numpy_pos"] <= 624 \
            or meta.get("numpy_has_gauss") not in (0, 1) \
            or not isinstance(meta.get("numpy_cached_gaussian"), float):
        raise ResumeError(f"{where}: its random-state values are not random states")
    cuda = [tensors[f"cuda.{i}"] for i in range(len(tensors)) if f"cuda.{i}" in tensors]
    if torch.cuda.is_available() and cuda and len(cuda) != torch.cuda.device_count():
        raise ResumeError(f"{where}: saved the random states of {len(cuda)} GPUs, this "
                          f"machine has {torch.cuda.device_count()}")
    torch.set_rng_state(t)
    random.setstate((3, tuple(int(v) for v in py.tolist()), gauss))
    np.random.set_state(("MT19937", nump.numpy().astype(np.uint32), meta["numpy_pos"],
                         meta["numpy_has_gauss"], meta["numpy_cached_gaussian"]))
    if torch.cuda.is_available() and cuda:
        torch.cuda.set_rng_state_all(cuda)


# --- the optimizer, as tensors and JSON ----------------------------------------------------

def split_optimizer(state: dict) -> tuple[dict, dict]:
    """An optimizer's ``state_dict()`` as (tensors by "<param>.<name>", the rest as JSON)."""
    import torch

    tensors, plain = {}, {}
    for idx, values in state["state"].items():
        for name, value in values.items():
            key = f"{int(idx)}.{name}"
            if torch.is_tensor(value):
                tensors[key] = value.detach().cpu().contiguous()
            else:
                plain[key] = value
    return tensors, {"param_groups": state["param_groups"], "plain": plain}


def join_optimizer(tensors: dict, saved: dict) -> dict:
    state: dict[int, dict] = {}
    for key, value in list(tensors.items()) + list((saved.get("plain") or {}).items()):
        idx, _, name = key.partition(".")
        state.setdefault(int(idx), {})[name] = value
    groups = [dict(g) for g in saved["param_groups"]]
    for g in groups:
        if isinstance(g.get("betas"), list):
            g["betas"] = tuple(g["betas"])
    return {"state": state, "param_groups": groups}


class Checkpointer:
    """Saves and loads one trainer's checkpoints (every process calls :meth:`save` and
    :meth:`load`; the main process writes the folders, each process its random states)."""

    def __init__(self, trainer):
        self.tr = trainer
        self.acc = trainer.acc
        self.run_dir = Path(trainer.run_dir)
        self.lora = bool(trainer.cfg.training.lora_rank)
        self.sharded = self.acc.distributed_type.value in SHARDED
        self.saved_step: int | None = None

    def _model(self):
        return self.acc.unwrap_model(self.tr.model)

    # saving -----------------------------------------------------------------------------------
    def save(self, step: int, state: dict) -> Path | None:
        """Save checkpoint ``step`` (built as ``.step-<step>.tmp`` and renamed in), then keep
        the newest ``training.keep_checkpoints``. Returns its folder (main process)."""
        from safetensors.torch import save_file

        acc, tr = self.acc, self.tr
        root = ckpts.checkpoints_dir(self.run_dir)
        tmp = root / ckpts.temp_name(step)
        target = root / ckpts.checkpoint_name(step)
        t0 = time.time()
        acc.wait_for_everyone()
        if acc.is_main_process:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
        acc.wait_for_everyone()
        if self.sharded:  # the backend's own format for the sharded weights and optimizer
            acc.save_state(str(tmp), safe_serialization=True)
            acc.wait_for_everyone()
            for p in list(tmp.glob("random_states_*.pkl")):
                p.unlink(missing_ok=True)  # ours are below, as safetensors
        tensors, meta = rng_state()
        save_file(tensors, str(tmp / ckpts.rng_file(acc.process_index)), metadata=meta)
        if not self.sharded:
            trained = {n: p.detach().cpu().contiguous()
                       for n, p in _trained(self._model()).items()}
            opt_tensors, opt_plain = split_optimizer(tr.opt.state_dict())
        if acc.is_main_process:
            if not self.sharded:
                save_file(trained, str(tmp / ckpts.MODEL_FILE), metadata={"format": "pt"})
                save_file(opt_tensors, str(tmp / ckpts.OPTIMIZER_FILE))
            else:
                opt_plain = {"param_groups": []}
            scaler = acc.scaler.state_dict() if getattr(acc, "scaler", None) else None
            atomic_write_json(tmp / ckpts.TRAINER_FILE, {
                **state, "step": step, "scheduler": scheduler_state(tr.sched),
                "optimizer": opt_plain, "scaler": scaler, "accelerate_step": acc.step})
        acc.wait_for_everyone()
        if acc.is_main_process:
            cfg = tr.cfg
            atomic_write_json(tmp / CHECKPOINT_INFO, {
                "format": ckpts.FORMAT, "step": step, "saved_at": now_iso(),
                "num_processes": acc.num_processes, "lora": self.lora, "method": cfg.method,
                "sharded": self.sharded, "settings": ckpts.settings(cfg),
                "data": tr.data_hashes, "total_steps": tr.total_steps,
                "steps_per_epoch": tr.steps_per_epoch, "seconds": round(time.time() - t0, 3)})
            if target.exists():
                replace_dir(tmp, target)
            else:
                os.rename(tmp, target)
            ckpts.prune(self.run_dir, cfg.training.keep_checkpoints)
        acc.wait_for_everyone()
        self.saved_step = step
        return target

    # loading ----------------------------------------------------------------------------------
    def check(self, step: int, folder: Path) -> dict:
        """What :func:`~sga_core.runs.checkpoints.check_resume` cannot tell without the
        model: the run's shape (steps per epoch, total steps) and every saved tensor's
        name and shape against the model and optimizer. Returns the trainer file."""
        tr = self.tr
        where = f"run {self.run_dir.name}: {ckpts.CHECKPOINTS_DIR}/{folder.name}"
        info = ckpts.check_info(self.run_dir, step, folder, self.acc.num_processes)
        if info["steps_per_epoch"] != tr.steps_per_epoch:
            raise ResumeError(f"{where}/{CHECKPOINT_INFO}: saved with "
                              f"{info['steps_per_epoch']} steps per epoch, this run has "
                              f"{tr.steps_per_epoch} (its data or batching changed)")
        if tr.total_steps < step:
            raise ResumeError(f"cannot resume run {self.run_dir.name}: it now has "
                              f"{tr.total_steps} steps in all (training.max_steps, epochs), "
                              f"below the checkpoint's step {step}")
        if info["sharded"] != self.sharded:
            raise ResumeError(f"{where}: saved {'with' if info['sharded'] else 'without'} "
                              "DeepSpeed/FSDP sharding; resume it the same way")
        pos = ckpts.check_trainer_file(self.run_dir, step, folder)
        if not self.sharded:
            names = {n: tuple(p.shape) for n, p in _trained(self._model()).items()}
            self._check_shapes(folder / ckpts.MODEL_FILE, names, f"{where}/{ckpts.MODEL_FILE}",
                               "this run's trained weights" + (" (LoRA adapters)"
                                                               if self.lora else ""))
        return pos

    @staticmethod
    def _check_shapes(path: Path, want: dict, where: str, what: str) -> None:
        header = ckpts.safetensors_header(path, where)
        got = {n: tuple(e.get("shape") or ()) for n, e in header.items()}
        if set(got) != set(want):
            extra, missing = sorted(set(got) - set(want)), sorted(set(want) - set(got))
            raise ResumeError(f"{where}: its weights do not match {what} ({len(got)} saved, "
                              f"{len(want)} expected"
                              + (f"; not in this model: {extra[0]}" if extra else "")
                              + (f"; missing: {missing[0]}" if missing else "") + ")")
        bad = next((n for n in want if got[n] != want[n]), None)
        if bad:
            raise ResumeError(f"{where}: {bad} has shape {list(got[bad])}, this model's "
                              f"{list(want[bad])}")

    def load(self, step: int, folder: Path) -> dict:
        """Load checkpoint ``step`` (``folder``) into the prepared model, optimizer,
        scheduler and random states, each part checked before any is used; returns the
        trainer's saved position. Nothing on disk is changed."""
        import torch
        from safetensors.torch import load_file

        acc, tr = self.acc, self.tr
        where = f"run {self.run_dir.name}: {ckpts.CHECKPOINTS_DIR}/{folder.name}"
        pos = self.check(step, folder)
        opt_state = None
        if not self.sharded:
            try:
                opt_tensors = load_file(str(folder / ckpts.OPTIMIZER_FILE), device="cpu")
                opt_state = join_optimizer(opt_tensors, pos["optimizer"])
            except ResumeError:
                raise
            except Exception as exc:
                raise ResumeError(f"{where}/{ckpts.OPTIMIZER_FILE}: cannot be read "
                                  f"({type(exc).__name__}: {exc})") from None
            self._check_optimizer(opt_state, f"{where}/{ckpts.OPTIMIZER_FILE}")
        sched_state = checked_scheduler(tr.sched, pos["scheduler"],
                                        f"{where}/{ckpts.TRAINER_FILE}")
        if opt_state is not None:
            for i, (g, m) in enumerate(zip(opt_state["param_groups"],
                                           tr.opt.state_dict()["param_groups"])):
                problem = _unlike({k: v for k, v in g.items() if k != "params"},
                                  {k: v for k, v in m.items() if k != "params"})
                if problem:
                    raise ResumeError(f"{where}/{ckpts.TRAINER_FILE}: optimizer param group "
                                      f"{i}: {problem}")
        rng_where = f"{where}/{ckpts.rng_file(acc.process_index)}"
        # everything checked: now load (in memory only)
        try:
            if self.sharded:
                acc.load_state(str(folder))
            else:
                saved = load_file(str(folder / ckpts.MODEL_FILE), device="cpu")
                params = _trained(self._model())
                with torch.no_grad():
                    for name, p in params.items():
                        p.copy_(saved[name].to(dtype=p.dtype))
                tr.opt.load_state_dict(opt_state)
            tr.sched.load_state_dict(sched_state)
            if pos.get("scaler") and getattr(acc, "scaler", None) is not None:
                acc.scaler.load_state_dict(pos["scaler"])
        except ResumeError:
            raise
        except Exception as exc:
            raise ResumeError(f"{where}: cannot be loaded into this run "
                              f"({type(exc).__name__}: {exc})") from None
        set_rng_state(folder / ckpts.rng_file(acc.process_index), rng_where)
        if isinstance(pos.get("accelerate_step"), int):
            acc.step = pos["accelerate_step"]
        self.saved_step = step
        return pos

    def _check_optimizer(self, state: dict, where: str) -> None:
        """The saved optimizer state fits this run's optimizer: the same parameter groups,
        each moment the shape of its parameter."""
        import torch

        mine = self.tr.opt.state_dict()["param_groups"]
        groups = state["param_groups"]
        if len(groups) != len(mine) or any(
                not isinstance(g, dict) or not isinstance(g.get("params"), list)
                or len(g["params"]) != len(m["params"]) for g, m in zip(groups, mine)):
            raise ResumeError(f"{where}: its parameter groups do not match this run's "
                              "optimizer")
        shapes = {}
        params = [p for group in self.tr.opt.param_groups for p in group["params"]]
        ids = [i for g in groups for i in g["params"]]
        if sorted(ids) != list(range(len(params))) or \
                any(not _is_index(i, len(params)) for i in state["state"]):
            raise ResumeError(f"{where}: its parameter numbers do not match this run's "
                              "optimizer")
        for i, p in zip(ids, params):
            shapes[i] = tuple(p.shape)
        for i, values in state["state"].items():
            for name, value in values.items():
                if torch.is_tensor(value) and value.numel() > 1 and \
                        tuple(value.shape) != shapes[i]:
                    raise ResumeError(f"{where}: {i}.{name} has shape {list(value.shape)}, "
                                      f"its parameter {list(shapes[i])}")


def scheduler_state(sched) -> dict:
    """The learning-rate scheduler's state as plain values (LambdaLR's function is the
    run's, rebuilt from its config: not saved)."""
    return {k: v for k, v in sched.state_dict().items() if k != "lr_lambdas"}


def checked_scheduler(sched, saved: dict, where: str) -> dict:
    """``saved`` (trainer.json's scheduler) as a state for ``sched``: the same keys as its
    own state, each value of the same kind (ResumeError naming the file otherwise)."""
    mine = sched.state_dict()
    problem = _unlike(saved, scheduler_state(sched))
    if problem:
        raise ResumeError(f"{where}: scheduler {problem}")
    return {**saved, "lr_lambdas": [None] * len(mine.get("lr_lambdas") or [])}


def _kind(v) -> str:
    if v is None or isinstance(v, bool):
        return repr(v) if v is None else "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, (list, tuple)):
        return "list"
    return type(v).__name__


def _unlike(saved: dict, mine: dict) -> str | None:
    """What makes ``saved`` not a state of the shape ``mine`` is (None when nothing): a
    missing or extra key, or a value of another kind (numbers stay numbers)."""
    if not isinstance(saved, dict):
        return "is not an object"
    if set(saved) != set(mine):
        diff = sorted(set(saved) ^ set(mine))
        return f"has other entries than this run's ({diff[0]!r})"
    for key, value in mine.items():
        got = saved[key]
        if _kind(got) != _kind(value) and value is not None:
            return f"{key!r} is {str(got)[:30]!r}, not a {_kind(value)}"
        if _kind(value) == "list" and any(_kind(a) != _kind(b) for a, b in zip(got, value)):
            return f"{key!r} holds values of the wrong kind"
        if _kind(got) == "number" and not math.isfinite(got):
            return f"{key!r} is not finite"
    return None


def _is_index(i, n: int) -> bool:
    return isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n
