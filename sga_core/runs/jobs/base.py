"""What a job of a run folder is, and the one lifecycle every kind goes through.

A job kind (:class:`JobKind`, one module of this package each) says in one place what it is:
its name, its status file, request marker and log (paths of :class:`RunFolder`), the
processes its status records, and how it starts. Every kind then goes through the same
lifecycle, written once here:

``requested`` (a marker, or a queued status) -> ``claimed`` (the request taken under the run
folder's lock: :func:`claim`) -> ``running`` (:func:`start`) -> ``completed``, ``failed``
with its reason, or ``cancelled`` (:func:`finish`; a cancel: :func:`cancel`).

A cancel and a claim hold the same lock, so a request is either claimed (and then stopped)
or dropped (and never starts); a cancel asked twice does what one does. Where the job runs
(this machine's queue, SLURM) is the backend's business (:mod:`sga_core.runs.backends`).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sga_core.fileio import atomic_write_json, dir_lock, now_iso, read_json
from sga_core.runs import status as run_status
from sga_core.runs.folder import STATUS, RunFolder
from sga_core.runs.memory import exit_cause
from sga_core.runs.procs import caller_env, derive, recorded, signal_ours, spawn


@dataclass(frozen=True)
class JobKind:
    """One kind of job of a run folder.

    - ``name``: what a person reads ("evaluation"); ``key``: its short name ("eval"), the
      one the status writer (:mod:`sga_core.runs.status`) and the backends use;
    - ``status``, ``request``, ``log``: the names of :class:`RunFolder` properties that give
      its status file, its request marker (None: a queued status is the request) and its log;
    - ``read`` / ``shown``: the names of :class:`RunFolder`'s checked reader of that status
      and of the reader that shows it (processes gone, SLURM's view);
    - ``pids``: the status fields naming its processes;
    - ``argv(run_dir, request)``: its command, from the request it was claimed with;
    - ``fresh``: the fields a new start of it resets;
    - ``ended``: what a failure says it ended without;
    - ``dropped(request)``: the fields a request cancelled before it started is recorded
      with (its record is fresh: nothing of an earlier job's stays);
    - ``refusal(run_dir)``: why it cannot start now; ``started(request)``: what its running
      record says of its request.

    A kind is one module of this package with a ``KIND``; :data:`sga_core.runs.jobs.KINDS`
    finds it (tests/unit/runs/test_job_kinds.py holds every kind to the lifecycle).
    """

    name: str
    key: str
    status: str
    request: str | None
    log: str
    read: str
    shown: str
    pids: tuple[str, ...] = ("pid",)
    argv: Callable[[Path, dict], list[str]] | None = None
    fresh: dict = field(default_factory=dict)
    ended: str = "recording how it ended"
    #: the fields a request dropped before it started is recorded cancelled with
    dropped: Callable[[dict], dict] | None = None
    #: why a job of this kind of a run cannot start now (None: it can)
    refusal: Callable[[Path], str | None] | None = None
    #: what its running record says of the request it was started with, beside its process
    started: Callable[[dict], dict] | None = None
    #: "run": a job of a run folder (``status``, ``request``, ``log``, ``read`` and ``shown``
    #: name :class:`RunFolder`'s paths and readers); "project": a project's job, in a folder
    #: of its own (``<project>/<key>/``: the file names themselves), run as ``python -m
    #: <module> <project folder>`` at once, its status a fresh record each time
    where: str = "run"
    module: str | None = None
    #: the order the runner starts waiting jobs of different kinds in (lowest first)
    priority: int = 1

    # --- files ------------------------------------------------------------------------------
    def _path(self, folder, name: str) -> Path:
        return getattr(RunFolder(folder), name) if self.where == "run" else Path(folder) / name

    def status_path(self, run_dir) -> Path:
        return self._path(run_dir, self.status)

    def request_path(self, run_dir) -> Path | None:
        return self._path(run_dir, self.request) if self.request else None

    def log_path(self, run_dir) -> Path:
        return self._path(run_dir, self.log)

    def log_tail(self, run_dir, n_lines: int = 15) -> str:
        from sga_core.runs.folder import tail

        return tail(self.log_path(run_dir), n_lines)

    # --- status: one reader, one writer -----------------------------------------------------
    def read_status(self, run_dir) -> dict:
        """Its status file as written, checked ({} when absent)."""
        if self.where != "run":
            return run_status.read(self.status_path(run_dir))
        return getattr(RunFolder(run_dir), self.read)()

    def effective(self, run_dir) -> dict:
        """Its status as shown (processes gone: failed; on SLURM: as its job is)."""
        if self.where != "run":
            return derive(self.read_status(run_dir), self.pids, f"{self.name} job's")
        return getattr(RunFolder(run_dir), self.shown)()

    def write(self, run_dir, state: str | None = None, /, **fields) -> dict:
        """Merge ``fields`` (and ``state``) into its status file; a run folder's job never
        re-creates the run folder once it is gone."""
        within = run_dir if self.where == "run" else None
        return run_status.update(self.status_path(run_dir), state, within=within, **fields)

    def requested(self, run_dir) -> bool:
        path = self.request_path(run_dir)
        return bool(path and path.exists())

    def __str__(self) -> str:
        return self.name


# --- the lifecycle --------------------------------------------------------------------------

def read_request(kind: JobKind, run_dir) -> dict | None:
    """The request a job of ``kind`` waits with (None: none, or one being replaced)."""
    path = kind.request_path(run_dir)
    try:
        data = read_json(path, default=None) if path else None
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def request(kind: JobKind, run_dir, fields: dict) -> None:
    """Ask for a job of ``kind`` of a run folder (its request marker, written whole)."""
    atomic_write_json(kind.request_path(run_dir), {"requested_at": now_iso(), **fields})


def claim(kind: JobKind, run_dir) -> dict | None:
    """Take the request of a job of ``kind`` under the run folder's lock: the request (its
    marker is gone from now on, so a cancel from here on stops the job), or None when a
    cancel dropped it first (nothing must start). The caller starts the job while it still
    holds the lock (:func:`claimed`)."""
    data = read_request(kind, run_dir)
    kind.request_path(run_dir).unlink(missing_ok=True)
    return data


def start(kind: JobKind, run_dir, req: dict, /, *, foreground: bool = False,
          env: dict | None = None, **fields) -> subprocess.Popen:
    """Start the job's command (its own session; output appended to its log, a project
    job's log begun afresh); its status says running at once, with a fresh record (a
    project job's holds nothing of the last one). ``foreground``: it stops once this
    process is gone; ``env``: entries for its environment only (secrets). Returns the Popen
    (not waited for)."""
    run_dir = Path(run_dir).resolve()
    project = kind.where != "run"
    if project:
        kind.status_path(run_dir).unlink(missing_ok=True)
    env = {**(caller_env() if foreground else {}), **(env or {})}
    # a project job runs at the background niceness of every job the UI starts; a run's
    # jobs at the runner's (already niced)
    proc = spawn(kind.argv(run_dir, req), kind.log_path(run_dir), nice=None if project else 0,
                 env=env or None, append=not project)
    kind.write(run_dir, "running", pid=proc.pid, pid_start=proc.sga_record["start"],
               error=None, stage="starting", started_at=now_iso(), ended_at=None,
               host=os.uname().nodename, cancel_requested_at=None,
               **{**kind.fresh, **(kind.started(req) if kind.started else {}), **fields})
    return proc


def project_argv(module: str):
    """The command of a project job: ``python -m module <project folder>`` (its folder is
    ``<project>/<key>/``)."""
    def argv(job_dir: Path, request: dict) -> list[str]:
        return ["python", "-m", module, str(Path(job_dir).parent)]
    return argv


def project_kind(key: str, name: str, module: str) -> JobKind:
    """A project's job kind: ``<project>/<key>/`` holds its ``spec.json`` (what it was asked,
    never a secret), ``status.json`` and ``job.log``; ``module`` does the work."""
    return JobKind(name=name, key=key, where="project", module=module, status=STATUS,
                   request="spec.json", log="job.log", read="", shown="",
                   argv=project_argv(module), priority=10)


def finish(kind: JobKind, run_dir, returncode: int) -> dict:
    """Record the end of a job's process. A job that recorded its own end keeps it (its exit
    code is added); one that did not ended without saying so: cancelled when a cancel was
    asked (it may die of the SIGTERM before it can say so), else failed, with the cause of
    its exit and its log's tail (a clean exit of a job that never said it ran changes
    nothing)."""
    run_dir = Path(run_dir)
    st = kind.read_status(run_dir)
    final = st.get("state") in run_status.FINAL_STATES
    if final or (returncode == 0 and st.get("state") != "running"):
        return kind.write(run_dir, exit_code=returncode) if st else st
    if returncode != 0 and st.get("cancel_requested_at"):
        return kind.write(run_dir, "cancelled", ended_at=now_iso(), error="cancelled by request",
                          stage=None, exit_code=returncode)
    if returncode == 0:
        error = f"the {kind.name} ended without {kind.ended}"
    else:
        error = (f"the {kind.name} {exit_cause(returncode)} without recording how it ended; "
                 f"log tail:\n{kind.log_tail(run_dir)}")
    return kind.write(run_dir, "failed", ended_at=now_iso(), stage=None, exit_code=returncode,
                      error=error)


def cancel(kind: JobKind, run_dir) -> dict:
    """Stop a job of ``kind`` on this machine (idempotent): one requested and not claimed
    yet is dropped, under the lock its claim takes, and recorded cancelled (unless an
    earlier job's record is there: it stays, with its results); a running one is sent
    SIGTERM, only through the process its status records and proves ours (the runner
    escalates to SIGKILL after its grace period: :mod:`sga_core.runs.runner`); one that
    ended is left as it is. Returns its status as shown."""
    run_dir = Path(run_dir)
    with dir_lock(run_dir):
        st = kind.effective(run_dir)
        req = read_request(kind, run_dir)
        had = kind.requested(run_dir)
        if had:
            kind.request_path(run_dir).unlink(missing_ok=True)  # nothing starts after this
        if st.get("state") != "running":
            if had and not st.get("state"):  # asked for, never started: it ended here
                return kind.write(run_dir, "cancelled", ended_at=now_iso(), stage=None,
                                  error="cancelled before it started",
                                  **(kind.dropped(req or {}) if kind.dropped else {}))
            return st  # an earlier job's record (and its results) stays as it was
        return stop_recorded(kind, run_dir, st)


def stop_recorded(kind: JobKind, run_dir: Path, st: dict) -> dict:
    """SIGTERM the running process ``st`` records, after writing ``cancel_requested_at``;
    one on another host is refused, saying where to stop it."""
    if st.get("host", socket.gethostname()) != socket.gethostname():
        raise RuntimeError(f"the {kind.name} of {run_dir.name} runs on {st['host']}: stop it "
                           "there (its process cannot be signalled from this machine)")
    if not st.get("cancel_requested_at"):
        kind.write(run_dir, cancel_requested_at=now_iso())
    signal_ours(recorded(st), signal.SIGTERM)
    return kind.effective(run_dir)
