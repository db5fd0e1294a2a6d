"""The cluster's own tools, called directly: ``sbatch``, ``squeue``, ``sacct``, ``scancel``
(docs/decisions/009-slurm-through-its-own-tools.md).

Reading states is batched and cached (:class:`JobTable`): one ``squeue`` call answers for every
job of this user at once (asked by uid, never by ``$USER``; ``-t all`` keeps jobs that ended
in the last ``MinJobAge`` seconds). A job missing from that answer is asked for by its id
(``squeue -j``), then from ``sacct``. A page that lists 50 runs each second so makes at most
one ``squeue`` call per :data:`TTL_S` seconds, not 50: a cluster's controller is shared.

An answer is trusted only when it reads as the table that was asked for: every line a job id
and a SLURM state. Empty output on stderr alone, a line of garbage, a NUL byte: the answer is
a problem, never "no jobs". Output is decoded as UTF-8 with replacement, so a byte that is
not UTF-8 never breaks a page. The tools that read are given :data:`READ_TIMEOUT_S` seconds;
no lock is held while one runs, the last good answer is served meanwhile, and after a
failure the next try waits longer (up to :data:`BACKOFF_MAX_S`).

Every job id read or passed on is checked (:func:`job_id`): digits, or digits_digits for an
array task; anything else (``--me``) is refused before any tool sees it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from sga_core.params import ConfigError
from sga_core.runs.validate import SLURM_JOB_ID

TOOLS = ("sbatch", "squeue", "sacct", "scancel")
#: seconds a squeue answer serves every reader (the pages refresh each second)
TTL_S = float(os.environ.get("SGA_SLURM_TTL", "5"))
#: seconds sbatch and scancel are given (a submission may be slow on a busy controller)
CALL_TIMEOUT_S = 60.0
#: seconds squeue and sacct are given: a page waits for them
READ_TIMEOUT_S = float(os.environ.get("SGA_SLURM_READ_TIMEOUT", "10"))
#: the longest wait between tries after squeue failed (the wait doubles from TTL_S)
BACKOFF_MAX_S = 120.0
#: how old the last good answer may be and still be served while squeue does not answer
STALE_MAX_S = 300.0
#: how many times each tool was called by this process (the bench reads it)
CALLS: Counter = Counter()
#: a SLURM job id: digits, or digits_digits for a task of a job array (ASCII digits only)
JOB_ID_RE = SLURM_JOB_ID  # one rule, the status readers' (runs/validate.py)
STATE_RE = re.compile(r"[A-Z][A-Z_]{1,40}")
SQUEUE_FIELDS = ("id", "state", "reason", "node", "submitted", "started", "ended")
SQUEUE_FORMAT = "%i|%T|%r|%N|%V|%S|%e"
SACCT_FORMAT = "JobID,State,Reason,NodeList,Submit,Start,End"
#: squeue's answer for a job id the controller does not know (any more)
INVALID_ID = "Invalid job id specified"


class SlurmError(ConfigError):
    """A SLURM tool refused or failed; the message is its own error, on one line."""


def is_job_id(value) -> bool:
    return isinstance(value, str) and JOB_ID_RE.fullmatch(value) is not None


def job_id(value, where: str = "") -> str:
    """``value`` when it is a SLURM job id, else :class:`SlurmError` naming it (and
    ``where`` it came from). Every id passed to scancel, squeue -j or sacct -j is checked
    here, so a value such as ``--me`` is never taken for an option."""
    if is_job_id(value):
        return value
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    raise SlurmError(f"{where + ': ' if where else ''}{shown} is not a SLURM job id "
                     "(expected digits, or digits_digits for an array task)")


def unavailable() -> str | None:
    """Why SLURM is not offered on this machine (a tool missing from PATH), or None."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return (f"{', '.join(missing)} not on PATH: this machine is not a SLURM login node "
                "(runs go to the local queue)")
    return None


def tool_env() -> dict[str, str]:
    """The environment the tools (and so a job, sbatch exports it) get: a run's own
    (offline defaults, the project on PYTHONPATH, no secret)."""
    from sga_core.runs.procs import child_env

    return child_env()


def decode(data: bytes | None) -> str:
    """A tool's output as text: UTF-8, a byte that is not UTF-8 replaced (a job named
    ``caf\\xe9`` in Latin-1 never breaks a page)."""
    return (data or b"").decode("utf-8", errors="replace")


def one_line(text: str) -> str:
    """The line of a tool's output that says what went wrong (its ``error:`` line)."""
    lines = [ln.strip() for ln in text.replace("\0", " ").splitlines() if ln.strip()]
    for ln in lines:
        if "error:" in ln:
            return ln.split("error:", 1)[1].strip()[:300]
    return lines[0][:300] if lines else "no output"


def call(tool: str, *args: str, timeout: float = CALL_TIMEOUT_S, read: bool = False) -> str:
    """Run ``tool args``; its stdout, or :class:`SlurmError` with its error line. ``read``:
    a query, whose answer on stderr alone (nothing on stdout) is an error, not "none"."""
    CALLS[tool] += 1
    try:
        out = subprocess.run([tool, *args], capture_output=True, timeout=timeout,
                             env=tool_env(), stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SlurmError(f"{tool}: not on PATH (no SLURM on this machine)") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{tool}: no answer from the SLURM controller in {timeout:.0f} s") \
            from None
    except OSError as exc:
        raise SlurmError(f"{tool}: cannot be run ({exc.strerror or exc})") from None
    stdout, stderr = decode(out.stdout), decode(out.stderr)
    if out.returncode or (read and not stdout.strip() and stderr.strip()):
        raise SlurmError(f"{tool}: {one_line(stderr or stdout)}")
    return stdout


def sbatch(script: str, *options: str, test_only: bool = False) -> str:
    """Submit ``script``; returns the job id (``--parsable``). ``test_only``: only check it
    (partition, account, QoS, limits) without submitting."""
    if test_only:
        call("sbatch", "--test-only", *options, script)
        return ""
    out = call("sbatch", "--parsable", *options, script).strip().split(";")[0]
    return job_id(out, "sbatch's answer")


def scancel(*job_ids: str) -> None:
    ids = [job_id(j, "scancel") for j in job_ids]
    if ids:
        call("scancel", *ids)


def parse_time(text: str) -> float | None:
    """A SLURM timestamp (2026-11-24T08:01:02) as epoch seconds; None for Unknown/N/A."""
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except (ValueError, AttributeError, TypeError):
        return None


def parse_table(tool: str, text: str, fields: tuple[str, ...],
                skip_ids: re.Pattern | None = None) -> dict[str, dict]:
    """The jobs of a tool's ``|``-separated answer, by id. Every line must be a job (a job
    id and a state); :class:`SlurmError` naming the first line that is not, so garbage is
    never read as "no jobs". ``skip_ids``: ids of a known shape that are left out (sacct's
    pending array ``12_[0-5]``)."""
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|")
        row = dict(zip(fields, (p.strip() for p in parts)))
        state = (row.get("state") or "").split()
        row["state"] = state[0] if state else ""  # "CANCELLED by 0"
        if len(parts) == len(fields) and "\0" not in line and STATE_RE.fullmatch(row["state"]):
            if is_job_id(row["id"]):
                out[row["id"]] = row
                continue
            if skip_ids is not None and skip_ids.fullmatch(row["id"]):
                continue
        shown = repr(line) if len(repr(line)) <= 60 else repr(line)[:57] + "..."
        raise SlurmError(f"{tool}: its answer is not a job table (line {n}: {shown})")
    return out


@dataclass(frozen=True)
class Seen:
    """SLURM's answer about one job: ``job`` (its record; None when SLURM does not know
    it), ``problem`` (SLURM could not be asked, or its answer was not understood), ``at``
    (when that answer was taken: two lookups with the same ``at`` are one answer)."""

    job: dict | None
    problem: str | None = None
    at: float = 0.0


class JobTable:
    """Every job of this user as SLURM sees it, refreshed at most once per ``ttl`` seconds
    for all readers (threads of one server share it). No lock is held while a tool runs:
    one reader asks, the others are served the last answer."""

    def __init__(self, ttl: float = TTL_S):
        self.ttl = ttl
        self.lock = threading.Lock()
        self.answered = threading.Condition(self.lock)
        self.jobs: dict[str, dict] = {}
        self.taken_at = 0.0  # when the last good answer was taken (0: none yet)
        self.asked_at = 0.0  # when squeue was last asked
        self.error: str | None = None  # why the last try failed (None: it answered)
        self.failures = 0  # tries failed in a row
        self.busy = False  # a squeue call is under way
        self.by_id: dict[str, Seen] = {}  # jobs asked for by id (squeue -j), per ttl
        self.accounting: dict[str, dict] = {}
        self.accounting_at = 0.0
        self.accounting_error: str | None = None

    # --- the table ---------------------------------------------------------------------
    def next_try_at(self) -> float:
        """When squeue may be asked again: ``ttl`` after the last try, doubling with each
        failure in a row (up to :data:`BACKOFF_MAX_S`)."""
        wait = self.ttl if not self.failures else min(
            BACKOFF_MAX_S, max(self.ttl, 1.0) * 2 ** min(self.failures, 10))
        return self.asked_at + wait

    def refresh(self, force: bool = False) -> None:
        """Ask squeue once if its answer is due (or ``force``, unless it is failing); the
        call is made with no lock held. A reader with no answer at all waits for the one
        under way (at most the read timeout)."""
        with self.lock:
            now = time.time()
            due = now >= self.next_try_at() or (force and not self.failures)
            if self.busy or not due:
                if self.busy and not self.taken_at and self.error is None:
                    self.answered.wait(READ_TIMEOUT_S + 1)
                return
            self.busy, self.asked_at = True, now
        jobs, error = None, None
        try:
            text = call("squeue", "-h", "-r", "-t", "all", "-u", str(os.getuid()),
                        "-o", SQUEUE_FORMAT, timeout=READ_TIMEOUT_S, read=True)
            jobs = parse_table("squeue", text, SQUEUE_FIELDS)
        except SlurmError as exc:
            error = str(exc)
        finally:
            with self.lock:
                self.busy = False
                if jobs is not None:
                    self.jobs, self.taken_at, self.error, self.failures = \
                        jobs, time.time(), None, 0
                    self.by_id = {}
                else:
                    self.error = error or "squeue: the call was interrupted"
                    self.failures += 1
                self.answered.notify_all()

    def lookup(self, job: str, submitted: float | None = None, confirm: bool = True) -> Seen:
        """SLURM's answer about job ``job`` (:class:`Seen`). A job submitted after the
        cached answer was taken is asked for afresh. One missing from the table is asked
        for by id, then from sacct (``confirm``; without it, the table alone answers).
        While squeue fails, the last good answer (at most :data:`STALE_MAX_S` old) still
        shows the jobs it listed; a job it did not list is a problem then, not gone."""
        try:
            job = job_id(job, "slurm_job_id")
        except SlurmError as exc:
            return Seen(None, str(exc))
        with self.lock:
            new = bool(submitted and job not in self.jobs and submitted >= self.taken_at - 1)
        self.refresh(force=new)
        with self.lock:
            jobs, taken_at, error, busy = self.jobs, self.taken_at, self.error, self.busy
        if taken_at and job in jobs and time.time() - taken_at <= STALE_MAX_S:
            return Seen(jobs[job], None, taken_at)
        if error or not taken_at:
            return Seen(None, error or "squeue has not answered yet")
        if busy and new:  # a new job, and squeue's answer is under way: no second call
            return Seen(None, "squeue is being asked; its answer comes at the next look")
        if not confirm:
            return Seen(None, None, taken_at)
        seen = self._by_id(job)
        if seen.job is not None or seen.problem:
            return seen
        return Seen(self._from_accounting(job), None, seen.at)

    def _by_id(self, job: str) -> Seen:
        """``squeue -j job``: the controller's answer about one job (cached per ``ttl``):
        the table may have left it out (another user's job in a shared runs folder)."""
        with self.lock:
            cached = self.by_id.get(job)
        if cached and time.time() - cached.at <= self.ttl:
            return cached
        try:
            text = call("squeue", "-h", "-r", "-t", "all", "-j", job, "-o", SQUEUE_FORMAT,
                        timeout=READ_TIMEOUT_S, read=True)
            seen = Seen(parse_table("squeue", text, SQUEUE_FIELDS).get(job), None, time.time())
        except SlurmError as exc:
            seen = Seen(None, None if INVALID_ID in str(exc) else str(exc), time.time())
        with self.lock:
            self.by_id[job] = seen
        return seen

    def _from_accounting(self, job: str) -> dict | None:
        """A job squeue no longer lists, from ``sacct`` (one call for every such job per
        ``ttl``); None where accounting is off or does not know it either."""
        with self.lock:
            due = job not in self.accounting and time.time() - self.accounting_at > self.ttl
            if due:
                self.accounting_at = time.time()
        if due:
            try:
                text = call("sacct", "-X", "-n", "-P", "-u", str(os.getuid()), "-S",
                            "now-14days", "-o", SACCT_FORMAT, timeout=READ_TIMEOUT_S,
                            read=True)
                rows, error = parse_table("sacct", text, SQUEUE_FIELDS,
                                          skip_ids=re.compile(r"[0-9]+[_+].+")), None
            except SlurmError as exc:  # accounting storage disabled: nothing more to know
                rows, error = {}, str(exc)
            with self.lock:
                self.accounting, self.accounting_error = rows, error
        with self.lock:
            return self.accounting.get(job)

    def forget(self) -> None:
        """Drop the cached answers (after a submit or a cancel: the next read asks again)."""
        with self.lock:
            self.asked_at = 0.0
            self.failures = 0
            self.by_id = {}
            self.accounting_at = 0.0
            self.accounting = {}


TABLE = JobTable()
