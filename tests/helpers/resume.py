"""A run stopped with checkpoints, for the resume tests: the tiny random Llama of
``conftest`` trained for 6 steps of SGA (batch 4 over the 10 demo rows), a checkpoint
every 2 steps and the newest two kept (steps 2 and 4), then marked failed as a killed run
is. :func:`copy_run` gives each test its own copy to damage."""

from __future__ import annotations

import shutil
from pathlib import Path

from sga_core.config import TrainConfig
from sga_core.runs import checkpoints as ckpts
from sga_core.runs import launch
from sga_core.runs import status as run_status
from sga_core.runs.create import create_run

STEPS = 6


def idk_normals(path: Path, demo_dir: Path) -> Path:
    from sga_core.data import load_qa
    from sga_core.normals.idk import idk_normals as make

    make(len(load_qa(demo_dir / "forget.jsonl")), 4, seed=3).save(path)
    return path


def checkpointed_run(root: Path, model: Path, demo_dir: Path, run_id: str = "stopped",
                     **training) -> Path:
    normals = idk_normals(root / "normals.jsonl", demo_dir)
    cfg = TrainConfig.from_dict({
        "run_id": run_id, "model": str(model), "method": "sga",
        "method_args": {"r": -0.8, "k": 4},
        "data": {"forget": str(demo_dir / "forget.jsonl"), "normals": str(normals)},
        "training": {"batch_size": 4, "max_steps": STEPS, "lr": 1e-3, "seed": 7,
                     "probe_every": 0, "eval_nll": False, "save_every": 2,
                     "keep_checkpoints": 2, **training},
        "launch": {"device": "cpu"}, "eval": {"enabled": False}})
    run_dir = create_run(cfg, root / "runs")
    proc = launch.start(run_dir)
    launch.finish(run_dir, proc.wait(300))
    st = run_status.read_run(run_dir)
    assert st["state"] == "completed", st
    assert [s for s, _ in ckpts.checkpoints(run_dir)] == [2, 4]
    run_status.write_run(run_dir, "failed", error="killed")
    return run_dir


def copy_run(run_dir: Path, root: Path) -> Path:
    (root / "runs").mkdir(parents=True, exist_ok=True)
    return Path(shutil.copytree(run_dir, root / "runs" / run_dir.name, symlinks=True))


def snapshot(run_dir: Path) -> dict[str, bytes]:
    """Every file of a run folder but its train.log, by path: to show a refused resume
    changed nothing."""
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file() and p.name != "train.log"}


def write_checkpoint(run_dir: Path, step: int) -> Path:
    """A checkpoint of ``step`` that passes every check made before a resume starts
    (:func:`sga_core.runs.checkpoints.check_resume`), with empty states: for tests of what
    offers and queues a resume, which load nothing."""
    import torch
    from safetensors.torch import save_file

    from sga_core.fileio import atomic_write_json
    from sga_core.runs.create import data_hashes
    from sga_core.runs.folder import CHECKPOINT_INFO, RunFolder

    cfg = RunFolder(run_dir).config()
    folder = ckpts.checkpoints_dir(run_dir) / ckpts.checkpoint_name(step)
    folder.mkdir(parents=True)
    save_file({"w": torch.zeros(1)}, str(folder / ckpts.MODEL_FILE))
    save_file({"0.exp_avg": torch.zeros(1)}, str(folder / ckpts.OPTIMIZER_FILE))
    save_file({k: torch.zeros(1) for k in ckpts.RNG_TENSORS}, str(folder / ckpts.rng_file(0)))
    atomic_write_json(folder / ckpts.TRAINER_FILE, {
        "step": step, "scheduler": {}, "optimizer": {"param_groups": []}})
    atomic_write_json(folder / CHECKPOINT_INFO, {
        "format": ckpts.FORMAT, "step": step, "num_processes": 1, "sharded": False,
        "settings": ckpts.settings(cfg), "data": data_hashes(cfg),
        "total_steps": max(step, cfg.training.max_steps or step), "steps_per_epoch": 1})
    return folder
