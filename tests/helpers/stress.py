"""A run folder to stress-test without training it: the tiny model copied in as its
``model/``, the demo's QA (or text) data as its snapshot; a hash of a folder's files, to show a
stress test left a model untouched; and the runner's lock held, so that a page's request is
written and no runner takes it."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import shutil
from pathlib import Path


def tiny_run(runs_dir: Path, tiny_model_dir: Path, demo_dir: Path, run_id: str, *,
             max_new_tokens: int = 4, completed: bool = False, text: bool = False,
             evaluated: bool = False) -> Path:
    """A run folder ``run_id`` of a 1-step GA config whose ``model/`` is the tiny model;
    ``completed``: its status says so (what the queue asks of a run it stress-tests);
    ``text``: on the demo's text passages instead of its QA pairs; ``evaluated``: an
    (empty) evaluation summary, so that ``stress --queue`` and Results take it."""
    files = ("text_forget.jsonl", "text_retain.jsonl") if text else ("forget.jsonl",
                                                                       "retain.jsonl")
    from sga_core.config import TrainConfig
    from sga_core.runs.create import create_run
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.status import write_run

    cfg = TrainConfig.from_dict({
        "run_id": run_id, "model": str(tiny_model_dir), "method": "ga",
        "data": {"forget": str(demo_dir / files[0]), "retain": str(demo_dir / files[1]),
                 "task": "text" if text else "qa"},
        "training": {"batch_size": 2, "max_steps": 1, "lr": 1e-3, "probe_count": 0},
        "eval": {"max_new_tokens": max_new_tokens}})
    run_dir = create_run(cfg, runs_dir)
    shutil.copytree(tiny_model_dir, RunFolder(run_dir).model_dir)
    if completed:
        write_run(run_dir, "completed")
    if evaluated:
        from sga_core.fileio import atomic_write_json

        atomic_write_json(RunFolder(run_dir).summary_path, {"task": "text" if text else "qa",
                                                            "metrics": {}})
    return run_dir


def file_hashes(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``folder``."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}


@contextlib.contextmanager
def runner_lock(runs: Path):
    """Hold the runner's lock: requests are written, no runner starts to take them."""
    from sga_core.runs.queue import RUNNER_LOCK

    runs.mkdir(parents=True, exist_ok=True)
    with open(runs / RUNNER_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
