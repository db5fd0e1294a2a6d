"""SLURM's job states in the workbench's words (docs/slurm.md#states): the pure join of a run
folder's status with SLURM's record of its job."""

from __future__ import annotations

import pytest

from sga_core.runs.slurm.client import one_line
from sga_core.runs.slurm.states import combine, pending_reason

QUEUED = {"state": "queued", "slurm_job_id": "7", "slurm_submitted_at": "2026-11-24T08:00:00Z"}
RUNNING = {**QUEUED, "state": "running", "started_at": "2026-11-24T08:00:09Z"}


def job(state: str, reason: str = "None", **extra) -> dict:
    return {"id": "7", "state": state, "reason": reason, "node": "gpu01",
            "submitted": "2026-11-24T08:00:00", "started": "2026-11-24T08:00:09", **extra}


@pytest.mark.parametrize("reason, said", [
    ("Resources", "waiting for resources"),
    ("Dependency", "held by a dependency"),
    ("JobArrayTaskLimit", "waiting: the sweep's jobs-at-once limit"),
    ("QOSMaxJobsPerUserLimit", "waiting: a limit of its account or QoS"),
])
def test_pending_jobs_are_queued_with_slurms_reason(reason, said):
    shown = combine(QUEUED, job("PENDING", reason, started="Unknown"), cancel_asked=False)
    assert shown["state"] == "queued"
    assert shown["slurm_reason"].startswith(said)
    assert "slurm_wait_s" not in shown


def test_a_running_job_shows_its_node_and_wait():
    shown = combine(QUEUED, job("RUNNING"), cancel_asked=False)
    assert (shown["state"], shown["slurm_node"], shown["slurm_wait_s"]) == \
        ("running", "gpu01", 9.0)


@pytest.mark.parametrize("sstate, state, words", [
    ("TIMEOUT", "failed", "time limit"),
    ("NODE_FAIL", "failed", "node"),
    ("OUT_OF_MEMORY", "failed", "out of memory"),
    ("PREEMPTED", "cancelled", "preempted"),
    ("FAILED", "failed", "failed"),
    ("COMPLETED", "failed", "ended before its run finished"),
])
def test_a_job_slurm_ended_under_a_running_run_says_why(sstate, state, words):
    shown = combine(RUNNING, job(sstate), cancel_asked=False)
    assert shown["state"] == state
    assert words in shown["slurm_reason"] and words in shown["error"]


def test_slurm_stopping_the_trainer_is_not_a_cancel_by_request():
    """The trainer takes SLURM's SIGTERM at the time limit for a cancel: SLURM's reason wins
    unless the cancel was asked for."""
    said_cancelled = {**RUNNING, "state": "cancelled", "error": "cancelled by request"}
    assert combine(said_cancelled, job("TIMEOUT"), cancel_asked=False)["state"] == "failed"
    assert combine(said_cancelled, job("CANCELLED"), cancel_asked=True)["state"] == "cancelled"


def test_a_job_slurm_no_longer_knows_is_never_running():
    shown = combine(RUNNING, None, cancel_asked=False)
    assert shown["state"] == "failed" and "no longer knows job 7" in shown["error"]
    done = {**RUNNING, "state": "completed"}
    assert combine(done, None, cancel_asked=False)["state"] == "completed"


def test_a_pending_job_cancelled_before_it_started_says_so():
    shown = combine(QUEUED, job("CANCELLED", started="Unknown"), cancel_asked=True)
    assert shown["state"] == "cancelled"
    assert shown["slurm_reason"] == "cancelled before it started"


def test_unknown_reasons_are_passed_on():
    assert pending_reason("Licenses") == "waiting (Licenses)"


def test_sbatch_errors_become_one_line():
    err = ("sbatch: error: invalid partition specified: nope\n"
           "allocation failure: Invalid partition name specified\n")
    assert one_line(err) == "invalid partition specified: nope"


def test_a_run_stopped_at_a_checkpoint_whose_job_was_requeued_is_queued_then_running():
    stopped = {**RUNNING, "state": "cancelled", "stopped_at_checkpoint": 12,
               "error": "stopped: checkpoint saved at step 12"}
    for sstate in ("REQUEUED", "PENDING"):
        shown = combine(stopped, job(sstate, "BeginTime"), cancel_asked=False)
        assert shown["state"] == "queued", sstate
        assert shown["slurm_reason"] == "requeued: continues from its checkpoint at step 12"
    assert combine(stopped, job("RUNNING"), cancel_asked=False)["state"] == "running"
    # a cancel asked for, or a job that ended, is not a requeue
    assert combine(stopped, job("PENDING"), cancel_asked=True)["state"] == "cancelled"
    assert combine(stopped, job("FAILED"), cancel_asked=False)["state"] == "cancelled"
    assert combine(stopped, job("TIMEOUT"), cancel_asked=False)["state"] == "failed"
