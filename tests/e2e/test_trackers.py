"""Experiment trackers through accelerate (``training.report_to``, docs/long-runs.md): a run
with TensorBoard writes event files into its folder whose scalars are metrics.jsonl's,
eval_steps.jsonl's and the final evaluation's, and its config as hyperparameters."""

from __future__ import annotations

from pathlib import Path

import pytest

from sga_core.config import TrainConfig
from sga_core.fileio import read_json, read_jsonl
from sga_core.runs import folder as runs
from sga_core.runs import launch
from sga_core.runs import status as run_status
from sga_core.runs.create import create_run
from sga_core.runs.folder import TENSORBOARD_DIR, RunFolder
from tests.helpers.cli import sga_cli

pytestmark = pytest.mark.slow


def scalars(log_dir: Path) -> dict[str, dict[int, float]]:
    """Every scalar series of the event files under ``log_dir``: tag -> {step: value}."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out: dict[str, dict[int, float]] = {}
    for events in sorted({p.parent for p in log_dir.rglob("events.out.tfevents.*")}):
        acc = EventAccumulator(str(events))
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            out.setdefault(tag, {}).update({e.step: e.value for e in acc.Scalars(tag)})
    return out


def close(a: float, b: float) -> bool:  # event files hold float32
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def test_tensorboard_scalars_are_the_run_folders_numbers(tiny_model_dir, demo_dir, runs_dir):
    cfg = TrainConfig.from_dict({
        "run_id": "tb", "model": str(tiny_model_dir), "method": "ga", "group": "g1",
        "data": {"forget": str(demo_dir / "forget.jsonl"),
                 "retain": str(demo_dir / "retain.jsonl")},
        "training": {"batch_size": 4, "max_steps": 4, "lr": 1e-3, "probe_every": 0,
                     "eval_every": 2, "eval_retain_rows": 4, "eval_rouge_rows": 0,
                     "report_to": "tensorboard"},
        "launch": {"device": "cpu"},
        "eval": {"enabled": True, "in_process": True, "max_retain_rows": 4,
                 "max_new_tokens": 4}})
    run_dir = create_run(cfg, runs_dir)
    proc = launch.start(run_dir)
    launch.finish(run_dir, proc.wait(600))
    assert run_status.read_run(run_dir)["state"] == "completed"
    assert run_status.read_eval(run_dir)["state"] == "completed"
    got = scalars(run_dir / TENSORBOARD_DIR)

    metrics = runs.metrics(run_dir)
    for key in ("loss", "forget_nll", "grad_norm", "lr"):
        series = got[f"train/{key}"]
        assert sorted(series) == [r["step"] for r in metrics]
        assert all(close(series[r["step"]], r[key]) for r in metrics), key
    evals = read_jsonl(RunFolder(run_dir).eval_steps_path)
    assert sorted(got["eval/forget_probability"]) == [r["step"] for r in evals] == [0, 2, 4]
    assert all(close(got["eval/forget_probability"][r["step"]], r["forget_probability"])
               for r in evals)
    summary = read_json(RunFolder(run_dir).summary_path)
    final = {k: v["value"] for k, v in summary["metrics"].items()
             if isinstance(v.get("value"), (int, float))}
    assert final and all(close(got[f"final/{k}"][4], v) for k, v in final.items())
    # the config as hyperparameters
    hparams = list((run_dir / TENSORBOARD_DIR).rglob("hparams.yml"))
    assert hparams and "training.lr: 0.001" in hparams[0].read_text()


def test_a_tracker_that_is_not_installed_is_refused_before_any_run_exists(tmp_path,
                                                                           demo_dir):
    pytest.importorskip("tensorboard")
    import importlib.util

    if importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed here")
    out = sga_cli("train", "--forget", str(demo_dir / "forget.jsonl"), "--method", "ga",
                  "--report-to", "tensorboard,wandb", "--runs-dir", str(tmp_path / "runs"))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "training.report_to: wandb is asked for but not installed here (pip install " \
           "wandb)" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
