"""The one module that writes status files.

- a run's ``status.json`` (docs/spec.md#53-statusjson): queued at creation, running once launched,
  then the trainer's progress and final state;
- a run's ``eval/status.json``: the evaluation's own state, stage and progress;
- a run's ``stress_status.json``: its stress test queued as a job (state, stage, progress);
- a project job's ``status.json`` (normal answers, r*, probes, imports), through its kind
  (:mod:`sga_core.runs.jobs`), which reads and shows it too.

Every write is a locked read-merge-write done atomically, so two processes updating one file
(a launcher and its trainer) never lose each other's fields. Readers call the ``effective_*``
functions and never write: a "running" record whose processes are all gone is *shown* as
failed. That rule lives once, in :func:`sga_core.runs.procs.derive`; the paths and checked
readers are :class:`sga_core.runs.folder.RunFolder`'s.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sga_core.fileio import atomic_write_bytes, atomic_write_json, dir_lock, now_iso
from sga_core.runs.folder import EVAL_DIR, STATUS, RunFolder
from sga_core.runs.procs import EVAL_PIDS, RUN_PIDS, derive, start_fields  # noqa: F401
from sga_core.runs.validate import FINAL_STATES, STATES  # noqa: F401  (read from here)
from sga_core.runs.validate import damaged_status as damaged  # noqa: F401

# a run's and its evaluation's status file inside the run folder (RunFolder owns the names)
RUN_FILE = STATUS
EVAL_FILE = Path(EVAL_DIR) / STATUS
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


def update(path: str | os.PathLike, state: str | None = None, /, *,
           within: str | os.PathLike | None = None, **fields) -> dict:
    """Merge ``fields`` (and ``state``) into the status file; returns the new status.
    ``within``: the folder the job belongs to (a run folder). A write never re-creates it
    once it is gone (deleted, or moved aside to be replaced): FileNotFoundError instead."""
    if state is not None and state not in STATES:
        raise ValueError(f"unknown state {state!r}")
    path = Path(path)
    if within is not None and not Path(within).is_dir():
        raise FileNotFoundError(f"{within}: the folder is gone; its status is not written")
    path.parent.mkdir(parents=True, exist_ok=True)
    with dir_lock(path.parent):
        status = read(path)
        if state is not None:
            status["state"] = state
        status.update(start_fields(fields, PID_FIELDS))
        status["updated_at"] = now_iso()
        atomic_write_json(path, status)
    return status


# --- runs ------------------------------------------------------------------------------------

def read_run(run_dir: str | os.PathLike) -> dict:
    """status.json, checked ({} when there is none; :func:`damaged` when it is damaged)."""
    return RunFolder(run_dir).read_status()


def write_run(run_dir: str | os.PathLike, state: str | None = None, **fields) -> dict:
    return update(RunFolder(run_dir).status_path, state, within=run_dir, **fields)


def saved_run(run_dir: str | os.PathLike) -> bytes | None:
    """status.json's bytes as they are now (None: there is none), for :func:`restore_run`."""
    try:
        return RunFolder(run_dir).status_path.read_bytes()
    except FileNotFoundError:
        return None


def restore_run(run_dir: str | os.PathLike, saved: bytes | None) -> None:
    """Put status.json back as :func:`saved_run` read it, under the lock its writers take:
    a change undone whole (a resume that SLURM refused leaves the run as it was)."""
    path = RunFolder(run_dir).status_path
    with dir_lock(path.parent):
        if saved is None:
            path.unlink(missing_ok=True)
        else:
            atomic_write_bytes(path, saved)


def effective_run(run_dir: str | os.PathLike) -> dict:
    """status.json as shown: a running run whose launcher and trainer are both gone is
    failed; one whose trainer still lives is running, whatever became of its launcher. A run
    sent to SLURM is shown as its job is (:func:`sga_core.runs.slurm.states.run_view`)."""
    return RunFolder(run_dir).status()


# --- evaluations ----------------------------------------------------------------------------

def read_eval(run_dir: str | os.PathLike) -> dict:
    """eval/status.json, checked like :func:`read_run`."""
    return RunFolder(run_dir).read_eval_status()


def write_eval(run_dir: str | os.PathLike, state: str | None = None, **fields) -> dict:
    return update(RunFolder(run_dir).eval_status_path, state, within=run_dir, **fields)


def effective_eval(run_dir: str | os.PathLike) -> dict:
    """eval/status.json as shown; an evaluation sent to SLURM as its job is."""
    return RunFolder(run_dir).eval_status()


# --- stress tests queued as jobs (docs/stress-tests.md#queued-as-a-job) ---------------------

def read_stress(run_dir: str | os.PathLike) -> dict:
    """stress_status.json, checked like :func:`read_run`."""
    return RunFolder(run_dir).read_stress_status()


def write_stress(run_dir: str | os.PathLike, state: str | None = None, **fields) -> dict:
    return update(RunFolder(run_dir).stress_status_path, state, within=run_dir, **fields)


def effective_stress(run_dir: str | os.PathLike) -> dict:
    """stress_status.json as shown; a stress test sent to SLURM as its job is."""
    return RunFolder(run_dir).stress_status()


def run_view(run_dir: str | os.PathLike) -> dict:
    """What a person is shown of a run: its effective status plus its evaluation's
    (``eval_state``, ``eval_error``, ``eval_stage``). Read-only."""
    ev = effective_eval(run_dir)
    return {**effective_run(run_dir), "eval_state": ev.get("state"),
            "eval_error": ev.get("error"), "eval_stage": ev.get("stage")}
