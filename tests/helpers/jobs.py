"""Long jobs for the job contract tests (tests/e2e/test_job_contract.py on this machine's
queue, tests/e2e/test_slurm_job_contract.py on SLURM): each runs until it is stopped."""

from __future__ import annotations

from pathlib import Path

from sga_core.config import TrainConfig
from sga_core.runs import queue


def long_training_config(bench: dict, run_id: str, **launch) -> TrainConfig:
    """A GA training of 100,000 steps of the tiny model (``launch``: its launch section)."""
    return TrainConfig.from_dict({
        "run_id": run_id, "model": str(bench["model"]), "method": "ga",
        "data": {"forget": str(bench["demo"] / "forget.jsonl")},
        "training": {"batch_size": 2, "max_steps": 100000, "lr": 1e-4, "probe_count": 0,
                     "eval_nll": False},
        "launch": launch, "eval": {"enabled": False}})


def request_long_stress(run_dir: Path) -> Path:
    """A relearning stress test of 100,000 steps, asked for as the pages ask for one."""
    queue.request_stress(run_dir, ["relearn"], {"rouge": False, "seeds": [0],
                                                "relearn_steps": [100000]})
    return run_dir


def stand_in_model(where: Path) -> str:
    """A folder a launch accepts as a model (a config.json naming nothing loadable), for
    runs that are made but never trained: a launch refuses a model folder that does not
    exist (sga_core.runs.create.check_model)."""
    folder = Path(where) / "stand-in-model"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text("{}")
    return str(folder)
