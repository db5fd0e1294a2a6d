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

A job SLURM does not list is not taken for gone on one answer: each distinct answer that left
it out is counted in status.json (``slurm_unseen``, since ``slurm_unseen_since``), and only
:data:`GONE_ANSWERS` answers over at least :data:`GONE_S` seconds settle the run as failed
(``slurm_state_final: UNKNOWN``). Until then the folder's own state is shown, with the doubt
in ``slurm_problem``. That verdict is the workbench's inference, not SLURM's: a job SLURM
lists again (pending or running) is shown as SLURM has it, and its start clears the
inference and trains (:func:`sga_core.runs.slurm.job.start`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from sga_core.fileio import now_iso
from sga_core.runs.slurm.client import TABLE, Seen, parse_time

#: the final SLURM state the workbench records for a job SLURM no longer lists: inferred,
#: not SLURM's own word (:func:`inferred`)
INFERRED = "UNKNOWN"
#: a job SLURM leaves out of this many distinct answers, over at least GONE_S seconds, is gone
GONE_ANSWERS = 3
GONE_S = float(os.environ.get("SGA_SLURM_GONE_S", "60"))
#: the fields that count a job's absence from SLURM's answers
UNSEEN_FIELDS = ("slurm_unseen", "slurm_unseen_since", "slurm_unseen_at")

FINAL = ("completed", "failed", "cancelled", "diverged")
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
    final = state in FINAL
    if job is None:
        if final:
            return status
        said = (f" (left out of {status['slurm_unseen']} answers in a row)"
                if status.get("slurm_unseen") else "")
        return {**status, "state": "failed", "slurm_reason": "unknown to SLURM",
                "error": status.get("error") or f"SLURM no longer knows job {jid}{said}: it "
                                                 "ended without its run finishing (see "
                                                 "slurm.log)"}
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


def inferred(status: dict) -> bool:
    """Whether ``status`` ended on the workbench's inference that SLURM forgot its job
    (:data:`INFERRED`), not on SLURM's or the run's own word: such a state never stops a
    job SLURM still has."""
    return status.get("slurm_state_final") == INFERRED and status.get("state") == "failed"


def revived(status: dict) -> dict:
    """An inferred-gone run (:func:`inferred`) as it was before the inference: running
    once its job started, else queued."""
    out = {**status, "state": "running" if status.get("slurm_started_at") else "queued",
           "slurm_state_final": None, "ended_at": None}
    if str(status.get("error") or "").startswith("SLURM no longer knows job"):
        out["error"] = None
    return out


def run_view(run_dir: str | os.PathLike, status: dict, write) -> dict:
    """``status`` (a SLURM run's status.json) as it should be shown; SLURM's verdict on a
    job it ended is written once with ``write`` (``status.write_run``; :func:`settle`;
    None: shown only).
    Where SLURM cannot be asked, or has left the job out of fewer answers than make it
    gone (:func:`missed`), the folder's own status, with ``slurm_problem`` saying why. A
    cancel was asked for when status.json has ``cancel_requested_at``
    (:func:`sga_core.runs.slurm.backend.cancel`)."""
    run_dir = Path(run_dir)
    final = status.get("slurm_state_final")
    if final == INFERRED and status.get("state") not in FINAL:
        # inferred gone, then its job started after all (an evaluation or stress job writes
        # "running" itself; only a training job's `job start` clears the inference): no
        # longer settled, and its misses count afresh
        status = {**status, "slurm_state_final": None, **dict.fromkeys(UNSEEN_FIELDS)}
        final = None
    cancel_asked = bool(status.get("cancel_requested_at"))
    if final and not inferred(status):  # settled: SLURM has nothing more to say
        if status.get("state") == "cancelled" and final in SLURM_STOPPED and \
                not cancel_asked:  # the trainer's SIGTERM came later
            shown, said = ENDED[final]
            return {**status, "state": shown, "slurm_reason": said,
                    "error": f"{said}; job {status.get('slurm_job_id')}"}
        return status
    submitted = parse_time(status.get("slurm_submitted_at") or "")
    # a job missing from the table is asked for by id only where that can change the run
    # (not for one settled by inference, nor one that ended on its own): the controller is
    # shared, and old runs are many
    seen = TABLE.lookup(str(status["slurm_job_id"]), submitted,
                        confirm=not final and status.get("state") not in FINAL)
    if final:  # inferred gone: where SLURM lists the job as living again, SLURM wins
        job = seen.job
        if job is not None and job.get("state") in PENDING + LIVE:
            return combine(revived(status), job, cancel_asked)
        return status
    if seen.problem:
        return {**status, "slurm_problem": seen.problem}
    if seen.job is None:
        return missed(run_dir, status, seen, write)
    job = seen.job
    if write is not None and any(status.get(k) is not None for k in UNSEEN_FIELDS):
        write(run_dir, **dict.fromkeys(UNSEEN_FIELDS))  # listed again: the count restarts
    shown = combine(status, job, cancel_asked)
    if write is not None and job.get("state") in ENDED:
        settle(run_dir, status, shown, job, write)
    return shown


def missed(run_dir: Path, status: dict, seen: Seen, write) -> dict:
    """A run whose job SLURM's answer ``seen`` did not list: each distinct answer is
    counted in status.json with ``write``; the run is failed ("unknown to SLURM") only once
    :data:`GONE_ANSWERS` answers over at least :data:`GONE_S` seconds left it out. Before
    that, the folder's own status with the doubt in ``slurm_problem``."""
    if status.get("state") in FINAL:
        return status  # the run ended on its own: SLURM forgetting its job changes nothing
    jid = status.get("slurm_job_id")
    count = status.get("slurm_unseen") or 0
    since = status.get("slurm_unseen_since") or seen.at
    if seen.at > (status.get("slurm_unseen_at") or 0):  # an answer not counted yet
        count += 1
        if write is not None:
            write(run_dir, slurm_unseen=count, slurm_unseen_since=since,
                  slurm_unseen_at=seen.at)
    if count >= GONE_ANSWERS and seen.at - since >= GONE_S:
        shown = combine({**status, "slurm_unseen": count}, None,
                        bool(status.get("cancel_requested_at")))
        if write is not None:
            settle(run_dir, status, shown, None, write)
        return shown
    return {**status, "slurm_problem": f"SLURM did not list job {jid} ({count} of "
            f"{GONE_ANSWERS} answers that would make it gone); asking again"}


def settle(run_dir: Path, status: dict, shown: dict, job: dict | None, write) -> None:
    """Record SLURM's final verdict in status.json with ``write`` (a locked merge; a run
    that ended on its own keeps its own state and error). ``job`` None: the job was gone
    from enough answers (:func:`missed`); recorded as :data:`INFERRED`."""
    if job is None and status.get("state") == shown.get("state"):
        return  # an ended run SLURM has forgotten: nothing to add
    fields = {k: shown[k] for k in ("slurm_node", "slurm_wait_s", "slurm_reason")
              if shown.get(k) is not None}
    fields["slurm_state_final"] = (job or {}).get("state") or INFERRED
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
