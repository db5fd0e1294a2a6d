"""The NLL before/after training is a stage of its own (status.json ``stage``, rows done of
all, with an ETA on the Runs page), bounded by ``training.nll_rows``: a project with
thousands of retain rows showed "step 0/120 · ETA -" for 14 minutes on a CPU."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sga_core.config import TrainConfig
from sga_core.runs import progress as run_progress
from sga_core.runs import status as run_status
from sga_core.train.trainer import run_training

pytestmark = pytest.mark.slow


def test_the_nll_is_a_stage_with_progress_over_a_bounded_sample(tiny_model_dir, demo_dir,
                                                                 tmp_path, monkeypatch, capsys):
    writes = []
    real = run_status.write_run

    def recorded(run_dir, state=None, **fields):
        writes.append(dict(fields))
        return real(run_dir, state, **fields)

    monkeypatch.setattr(run_status, "write_run", recorded)
    cfg = TrainConfig.from_dict({
        "run_id": "nll-stage", "model": str(tiny_model_dir), "method": "ga",
        "data": {"forget": str(demo_dir / "forget.jsonl"),
                 "retain": str(demo_dir / "retain.jsonl")},  # 10 and 110 rows
        "training": {"max_steps": 1, "batch_size": 4, "probe_count": 0, "nll_rows": 7},
        "eval": {"enabled": False}})
    run_dir = tmp_path / "nll-stage"
    run_dir.mkdir()
    assert run_training(cfg, run_dir) == "completed"
    stages = [w for w in writes if w.get("stage")]
    assert [w["stage"] for w in stages] == ["measuring the NLL before training",
                                            "measuring the NLL after training"]
    assert all(w["stage_total"] == 14 and w["stage_done"] == 0 for w in stages)  # 7 + 7
    counted = [w["stage_done"] for w in writes if w.get("stage_done")]
    assert counted and all(0 < n <= 14 for n in counted)
    st = run_status.read_run(run_dir)
    assert st.get("stage") is None and set(st["nll_before"]) == {"forget", "retain"}
    assert "measuring the NLL before training: 14 rows" in capsys.readouterr().out


def test_the_runs_page_progress_names_the_stage_with_an_eta(monkeypatch, tmp_path):
    begun = datetime.now(UTC) - timedelta(seconds=30)
    stamp = begun.strftime("%Y-%m-%dT%H:%M:%SZ")
    monkeypatch.setattr(run_progress, "effective_run", lambda d: {
        "state": "running", "started_at": stamp, "step": 0, "total_steps": 120,
        "stage": "measuring the NLL before training", "stage_done": 300,
        "stage_total": 2207, "stage_started_at": stamp})
    p = run_progress.progress(tmp_path)
    assert p["text"].startswith("measuring the NLL before training 300/2207")
    assert "step 0/120" in p["text"]
    assert p["eta_s"] == pytest.approx(30 / 300 * 1907, rel=0.2)
