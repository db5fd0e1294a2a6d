"""SLURM's job states in the workbench's words (docs/slurm.md#states).

A run sent to SLURM has ``slurm_job_id`` in its status.json. Its run folder stays the truth
about what the training did (the job writes status, metrics and evaluation there); SLURM is
the truth about whether the job still lives. :func:`run_view` joins the two:

- pending: "queued", with SLURM's reason ("waiting for resources", "held by a dependency");
- running (or completing): "running", with the node and the time the job waited;
- ended while the folder still says queued or running: failed or cancelled, with SLURM's
  reason (time limit, node failure, out of memory, preemption, scancel); a job SLURM no
  longer knows is never shown running.
- stopped at a checkpoint while SLURM still holds the job (requeued to resume it): queued
  ("requeued: continues from its checkpoint at step k"), then running again.

Once SLURM has ended a job, its verdict is written into status.json (:func:`settle`), so the
run reads the same after SLURM has forgotten the job.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from sga_core.fileio import now_iso
from sga_core.runs.slurm.client import TABLE, parse_time

PENDING = ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED")
LIVE = ("RUNNING", "COMPLETING", "CONFIGURING", "STAGE_OUT", "SIGNALING", "RESIZING",
        "STOPPED")
#: SLURM's end states: (workbench state, what is said)
ENDED = {
    "COMPLETED": ("completed", "the job ended"),
    "FAILED": ("failed", "the job failed (see slurm.log)"),
    "CANCELLED": ("cancelled", "cancelled in SLURM (scancel)"),
    "TIMEOUT": ("failed", "SLURM stopped the job at its time limit (TIMEOUT)"),
    "NODE_FAIL": ("failed", "the node running the job failed (NODE_FAIL)"),
    "OUT_OF_MEMORY": ("failed", "out of memory: SLURM killed the job (OUT_OF_MEMORY)"),
    "PREEMPTED": ("cancelled", "preempted by a higher-priority job (PREEMPTED)"),
    "BOOT_FAIL": ("failed", "the node failed to boot (BOOT_FAIL)"),
    "DEADLINE": ("failed", "the job missed its deadline (DEADLINE)"),
    "REVOKED": ("cancelled", "revoked by a federated cluster (REVOKED)"),
    "SPECIAL_EXIT": ("failed", "the job ended with a special exit (SPECIAL_EXIT)"),
}
#: SLURM's own ends of a job that the trainer sees only as SIGTERM (it then says cancelled)
SLURM_STOPPED = ("TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL",
                 "DEADLINE")
PENDING_REASONS = {
    "Resources": "waiting for resources",
    "Priority": "waiting for higher-priority jobs",
    "Dependency": "held by a dependency",
    "DependencyNeverSatisfied": "its dependency can never be satisfied",
    "JobHeldUser": "held by its user (scontrol release)",
    "JobHeldAdmin": "held by an administrator",
    "JobArrayTaskLimit": "waiting: the sweep's jobs-at-once limit",
    "BeginTime": "waiting for its start time",
    "ReqNodeNotAvail": "waiting: the requested nodes are not available",
    "PartitionDown": "waiting: the partition is down",
    "PartitionInactive": "waiting: the partition is inactive",
    "Reservation": "waiting for its reservation",
    "None": "waiting to be scheduled",
}


def pending_reason(reason: str) -> str:
    if reason in PENDING_REASONS:
        return PENDING_REASONS[reason]
    if reason.startswith(("QOS", "Assoc")):
        return f"waiting: a limit of its account or QoS ({reason})"
    return f"waiting ({reason})" if reason else "waiting to be scheduled"


def job_fields(job: dict) -> dict:
    """The node and the time waited, from SLURM's record of the job."""
    submitted, started = parse_time(job.get("submitted", "")), parse_time(job.get("started", ""))
    out = {"slurm_state": job.get("state")}
    if job.get("node") and job["node"] not in ("(null)", "None assigned", ""):
        out["slurm_node"] = job["node"]
    if submitted and started and job.get("state") not in PENDING:
        out["slurm_wait_s"] = round(max(0.0, started - submitted), 1)
    return out


def combine(status: dict, job: dict | None, cancel_asked: bool) -> dict:
    """What a SLURM run is shown as: its folder's ``status`` and SLURM's record ``job``
    (None: SLURM does not know the job). Pure."""
    state = status.get("state")
    jid = status.get("slurm_job_id")
    final = state in ("completed", "failed", "cancelled", "diverged")
    if job is None:
        if final:
            return status
        return {**status, "state": "failed", "slurm_reason": "unknown to SLURM",
                "error": status.get("error") or f"SLURM no longer knows job {jid}: it ended "
                                                 "without its run finishing (see slurm.log)"}
    seen = {**status, **job_fields(job)}
    sstate = job.get("state", "")
    if final and state == "cancelled" and status.get("stopped_at_checkpoint") is not None \
            and not cancel_asked and sstate in PENDING + LIVE:
        # stopped at a checkpoint and requeued (profile's resume_after_stop): the job lives on
        if sstate in LIVE:
            return {**seen, "state": "running", "slurm_reason": None}
        return {**seen, "state": "queued", "slurm_reason": "requeued: continues from its "
                f"checkpoint at step {status['stopped_at_checkpoint']}"}
    if final:
        if state == "cancelled" and not cancel_asked and sstate in SLURM_STOPPED:
            shown, said = ENDED[sstate]
            return {**seen, "state": shown, "slurm_reason": said,
                    "error": f"{said}; job {jid}"}
        return seen
    if sstate in PENDING:
        said = "cancelling" if cancel_asked else pending_reason(job.get("reason", ""))
        return {**seen, "state": "queued", "slurm_reason": said}
    if sstate in LIVE:
        return {**seen, "state": "running", "slurm_reason": None}
    shown, said = ENDED.get(sstate, ("failed", f"the job ended as {sstate}"))
    if shown == "completed":  # the job ended, the run did not say it finished
        shown, said = "failed", "the job ended before its run finished (see slurm.log)"
    if shown == "cancelled" and sstate == "CANCELLED":
        said = "cancelled before it started" if not status.get("started_at") else \
            "cancelled by request" if cancel_asked else said
    return {**seen, "state": shown, "slurm_reason": said, "ended_at": status.get("ended_at")
            or now_iso(), "error": status.get("error") or f"{said}; job {jid}"}


def run_view(run_dir: str | os.PathLike, status: dict, write) -> dict:
    """``status`` (a SLURM run's status.json) as it should be shown; SLURM's verdict on a
    job it ended is written once with ``write`` (``status.write_run``; :func:`settle`;
    None: shown only).
    Where SLURM cannot be asked, the folder's own status, with ``slurm_problem`` saying
    why. A cancel was asked for when status.json has ``cancel_requested_at``
    (:func:`sga_core.runs.slurm.backend.cancel`)."""
    run_dir = Path(run_dir)
    final = status.get("slurm_state_final")
    if final:  # settled: SLURM has nothing more to say
        if status.get("state") == "cancelled" and final in SLURM_STOPPED and \
                not status.get("cancel_requested_at"):  # the trainer's SIGTERM came later
            shown, said = ENDED[final]
            return {**status, "state": shown, "slurm_reason": said,
                    "error": f"{said}; job {status.get('slurm_job_id')}"}
        return status
    submitted = parse_time(status.get("slurm_submitted_at") or "")
    job, problem = TABLE.lookup(str(status["slurm_job_id"]), submitted)
    if problem:
        return {**status, "slurm_problem": problem}
    shown = combine(status, job, bool(status.get("cancel_requested_at")))
    if write is not None and (job is None or job.get("state") in ENDED):
        settle(run_dir, status, shown, job, write)
    return shown


def settle(run_dir: Path, status: dict, shown: dict, job: dict | None, write) -> None:
    """Record SLURM's final verdict in status.json with ``write`` (a locked merge; a run
    that ended on its own keeps its own state and error)."""
    if job is None and status.get("state") == shown.get("state"):
        return  # an ended run SLURM has forgotten: nothing to add
    fields = {k: shown[k] for k in ("slurm_node", "slurm_wait_s", "slurm_reason")
              if shown.get(k) is not None}
    fields["slurm_state_final"] = (job or {}).get("state") or "UNKNOWN"
    if shown.get("state") != status.get("state"):
        write(run_dir, shown["state"], error=shown.get("error"),
              ended_at=shown.get("ended_at") or now_iso(), **fields)
    else:
        write(run_dir, **fields)


def wait_s(status: dict) -> float | None:
    """How long a SLURM run waited (or has waited so far) before it started."""
    if status.get("slurm_wait_s") is not None:
        return status["slurm_wait_s"]
    submitted = parse_time(status.get("slurm_submitted_at") or "")
    if submitted and status.get("state") == "queued":
        return round(time.time() - submitted, 1)
    return None
