"""What a SLURM job runs around command.sh (sga_core/runs/slurm/job.py): a run cancelled
before it started never trains; a run stopped at a checkpoint starts again only in a job
that resumes (the profile's resume_after_stop), and only when nobody asked for a cancel."""

from __future__ import annotations

import pytest

from sga_core.runs import status as run_status
from sga_core.runs.folder import CANCEL_FILE
from sga_core.runs.slurm.job import main

STOPPED = {"state": "cancelled", "stopped_at_checkpoint": 12, "exit_code": 75,
           "error": "stopped: checkpoint saved at step 12", "ended_at": "2026-11-24T08:00:00Z",
           "slurm_job_id": "7", "slurm_wait_s": 4.0, "started_at": "2026-11-24T07:00:00Z"}


@pytest.fixture()
def run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURMD_NODENAME", "gpu01")
    monkeypatch.delenv("SLURM_ARRAY_JOB_ID", raising=False)
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    d = tmp_path / "run"
    d.mkdir()
    return d


def test_a_requeued_start_of_a_stopped_run_trains_again(run_dir, monkeypatch):
    run_status.write_run(run_dir, **STOPPED)
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    assert main(["stopped", str(run_dir)]) == 0
    assert main(["start", "--resume", str(run_dir)]) == 0
    st = run_status.read_run(run_dir)
    assert (st["state"], st["ended_at"], st["error"], st["exit_code"]) == \
        ("queued", None, None, None)
    assert (st["slurm_restarts"], st["slurm_node"], st["slurm_wait_s"]) == (1, "gpu01", 4.0)


def test_a_stopped_run_without_resume_or_with_a_cancel_does_not_train(run_dir):
    run_status.write_run(run_dir, **STOPPED)
    assert main(["start", str(run_dir)]) == 3  # sbatch slurm.sh by hand: not from step 0
    assert run_status.read_run(run_dir)["state"] == "cancelled"
    (run_dir / CANCEL_FILE).write_text("")
    assert main(["stopped", str(run_dir)]) == 1
    assert main(["start", "--resume", str(run_dir)]) == 3
    assert run_status.read_run(run_dir)["state"] == "cancelled"


@pytest.mark.parametrize("status", [
    {"state": "cancelled", "error": "cancelled by request"},
    {"state": "failed", "error": "boom"},
    {"state": "completed"},
    {**STOPPED, "cancel_requested_at": "2026-11-24T08:00:01Z"},
])
def test_only_a_stop_at_a_checkpoint_requeues(run_dir, status):
    run_status.write_run(run_dir, **status)
    assert main(["stopped", str(run_dir)]) == 1
    assert main(["start", "--resume", str(run_dir)]) == 3


def test_a_fresh_run_starts_with_or_without_resume(run_dir):
    run_status.write_run(run_dir, "queued", slurm_job_id="7")
    assert main(["start", "--resume", str(run_dir)]) == 0
    st = run_status.read_run(run_dir)
    assert st["state"] == "queued" and st["slurm_node"] == "gpu01"
    assert "slurm_restarts" not in st
    assert main(["stopped", str(run_dir)]) == 1
    assert main(["start", "--bogus", str(run_dir)]) == 2
