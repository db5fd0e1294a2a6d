"""The one module that writes status files.

- a run's ``status.json`` (docs/spec.md#53-statusjson): queued at creation, running once launched,
  then the trainer's progress and final state;
- a run's ``eval/status.json``: the evaluation's own state, stage and progress;
- a project job's ``status.json`` (normal answers, r*, probes).

Every write is a locked read-merge-write done atomically, so two processes updating one file
(a launcher and its trainer) never lose each other's fields. Readers call the ``effective_*``
functions and never write: a "running" record whose processes are all gone is *shown* as
failed. That rule lives here, once (:func:`derive`).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from sga_core.fileio import atomic_write_json, dir_lock, now_iso
from sga_core.runs.procs import is_ours, recorded, start_fields
from sga_core.runs.validate import FINAL_STATES, STATES  # noqa: F401  (read from here)

RUN_FILE = "status.json"
EVAL_FILE = Path("eval") / "status.json"
# the processes whose life a running record stands for
RUN_PIDS = ("launcher_pid", "pid")
EVAL_PIDS = ("pid",)
# every pid field a status file holds: each is written with its start time beside it
PID_FIELDS = ("pid", "launcher_pid", "runner_pid")


def read(path: str | os.PathLike) -> dict:
    """A status file as a dict ({} when there is none; an unreadable one says so)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        return {"state": "failed", "error": f"{path.name} is unreadable: {exc}"}
    except RecursionError:
        return {"state": "failed", "error": f"{path.name} is unreadable: nested too deeply"}
    return data if isinstance(data, dict) else {}


def update(path: str | os.PathLike, state: str | None = None, **fields) -> dict:
    """Merge ``fields`` (and ``state``) into the status file; returns the new status."""
    if state is not None and state not in STATES:
        raise ValueError(f"unknown state {state!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with dir_lock(path.parent):
        status = read(path)
        if state is not None:
            status["state"] = state
        status.update(start_fields(fields, PID_FIELDS))
        status["updated_at"] = now_iso()
        atomic_write_json(path, status)
    return status


def derive(status: dict, pid_keys: tuple[str, ...], what: str) -> dict:
    """``status`` as it should be shown: "running" while any of its processes lives (on this
    host), "failed" once all of them are gone. Pure: nothing is written."""
    if status.get("state") != "running":
        return status
    host = status.get("host")
    if isinstance(host, str) and host and host != socket.gethostname():
        return status  # a run on another machine: only its own files can tell
    procs = [recorded(status, k) for k in pid_keys if status.get(k)]
    # a process counts only while it is the one recorded: its start time, or for an old
    # record without one, a command line that runs sga_core (a stranger given the pid is not)
    if not procs or any(is_ours(p) for p in procs):
        return status
    return {**status, "state": "failed", "vanished": True,
            "error": status.get("error") or f"the {what} process vanished (killed or the "
                                            "machine restarted)"}


# --- runs ------------------------------------------------------------------------------------

def damaged(exc: Exception) -> dict:
    """The status a run (or evaluation) with a damaged status file is shown with: state
    "damaged", the file and what is wrong in ``damaged`` and ``error``; no process ids, so
    nothing is ever signalled on the strength of a damaged file."""
    return {"state": "damaged", "damaged": str(exc), "error": str(exc)}


def read_run(run_dir: str | os.PathLike) -> dict:
    """status.json, checked ({} when there is none; :func:`damaged` when it is damaged)."""
    from sga_core.runs.validate import RUN_STATUS_FIELDS, Damaged, read_json_file

    try:
        return read_json_file(run_dir, RUN_FILE, RUN_STATUS_FIELDS, ("state",)) or {}
    except Damaged as exc:
        return damaged(exc)


def write_run(run_dir: str | os.PathLike, state: str | None = None, **fields) -> dict:
    return update(Path(run_dir) / RUN_FILE, state, **fields)


def effective_run(run_dir: str | os.PathLike) -> dict:
    """status.json as shown: a running run whose launcher and trainer are both gone is
    failed; one whose trainer still lives is running, whatever became of its launcher. A run
    sent to SLURM is shown as its job is (:func:`sga_core.runs.slurm.states.run_view`)."""
    status = read_run(run_dir)
    if status.get("slurm_job_id"):
        from sga_core.runs.slurm.states import run_view as slurm_view

        shown = slurm_view(run_dir, status, write_run)
        if not shown.get("slurm_problem"):
            return shown
        status = shown  # SLURM cannot be asked: the processes on this machine can
    return derive(status, RUN_PIDS, "training")


# --- evaluations ----------------------------------------------------------------------------

def read_eval(run_dir: str | os.PathLike) -> dict:
    """eval/status.json, checked like :func:`read_run`."""
    from sga_core.runs.validate import EVAL_STATUS_FIELDS, Damaged, read_json_file

    try:
        return read_json_file(run_dir, str(EVAL_FILE), EVAL_STATUS_FIELDS, ("state",)) or {}
    except Damaged as exc:
        return damaged(exc)


def write_eval(run_dir: str | os.PathLike, state: str | None = None, **fields) -> dict:
    return update(Path(run_dir) / EVAL_FILE, state, **fields)


def effective_eval(run_dir: str | os.PathLike) -> dict:
    """eval/status.json as shown; an evaluation sent to SLURM as its job is."""
    status = read_eval(run_dir)
    if status.get("slurm_job_id"):
        from sga_core.runs.slurm.states import run_view as slurm_view

        shown = slurm_view(run_dir, status, write_eval)
        if not shown.get("slurm_problem"):
            return shown
        status = shown
    return derive(status, EVAL_PIDS, "evaluation")


def run_view(run_dir: str | os.PathLike) -> dict:
    """What a person is shown of a run: its effective status plus its evaluation's
    (``eval_state``, ``eval_error``, ``eval_stage``). Read-only."""
    ev = effective_eval(run_dir)
    return {**effective_run(run_dir), "eval_state": ev.get("state"),
            "eval_error": ev.get("error"), "eval_stage": ev.get("stage")}


# --- project jobs ---------------------------------------------------------------------------

def read_job(job_dir: str | os.PathLike) -> dict:
    return read(Path(job_dir) / "status.json")


def write_job(job_dir: str | os.PathLike, state: str | None = None, **fields) -> dict:
    return update(Path(job_dir) / "status.json", state, **fields)


def reset_job(job_dir: str | os.PathLike, **fields) -> dict:
    """Start a job's status afresh (a new job replaces the last one's record)."""
    path = Path(job_dir) / "status.json"
    path.unlink(missing_ok=True)
    return update(path, **fields)


def effective_job(job_dir: str | os.PathLike) -> dict:
    return derive(read_job(job_dir), ("pid",), "job's")
