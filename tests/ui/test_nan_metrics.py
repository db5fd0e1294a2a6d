"""A step whose loss is not a number is logged as "NaN" and every surface says NaN: the run
folder's metrics.jsonl, its checked reader, ``runs show`` and the Runs page. A value not
logged stays null and is never called NaN (docs/spec.md#5-the-run-directory)."""

from __future__ import annotations

import json
import math

import pytest

from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow


@pytest.fixture()
def nan_run(ui_env, tiny_model_dir, demo_dir, monkeypatch):
    """A real one-step run of the tiny model whose step came out NaN (loss) and infinite
    (gradient norm), as a diverging step does."""
    from sga_core.config import TrainConfig
    from sga_core.runs.create import create_run
    from sga_core.train.trainer import Trainer, run_training

    real = Trainer.train_step

    def diverging(self, batch):
        return {**real(self, batch), "loss": math.nan, "grad_norm": math.inf}

    monkeypatch.setattr(Trainer, "train_step", diverging)
    cfg = TrainConfig.from_dict({
        "run_id": "nan-run", "model": str(tiny_model_dir), "method": "ga",
        "data": {"forget": str(demo_dir / "forget.jsonl")},
        "training": {"max_steps": 1, "batch_size": 2, "eval_nll": False, "save_model": False,
                     "probe_count": 0},
        "eval": {"enabled": False}})
    run_dir = create_run(cfg, ui_env / "runs", state="running")
    assert run_training(cfg, run_dir) == "completed"
    return run_dir


def test_a_nan_loss_is_written_and_shown_as_nan(nan_run, capsys):
    from sga_core.cli import main
    from sga_core.runs.folder import RunFolder

    (line,) = (nan_run / "metrics.jsonl").read_text().splitlines()
    rec = json.loads(line)
    assert rec["loss"] == "NaN" and rec["grad_norm"] == "Infinity"  # never null
    assert rec["retain_nll"] is None  # not logged: GA trains on no retain rows
    (row,) = RunFolder(nan_run).metrics()
    assert math.isnan(row["loss"]) and row["grad_norm"] == math.inf
    assert row["retain_nll"] is None

    assert main(["runs", "show", "nan-run"]) == 0
    last = next(x for x in capsys.readouterr().out.splitlines()
                if x.startswith("last metrics:"))
    assert '"loss": NaN' in last and '"grad_norm": Infinity' in last
    assert '"retain_nll": null' in last

    at = open_page("app_pages/runs.py")
    warned = [shown(w.value) for w in at.warning if "Not a number" in w.value]
    assert len(warned) == 1 and "loss: NaN at step 1" in warned[0], warned
    assert "retain" not in warned[0]
