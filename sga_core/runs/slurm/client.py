"""The cluster's own tools, called directly: ``sbatch``, ``squeue``, ``sacct``, ``scancel``
(docs/decisions/009-slurm-through-its-own-tools.md).

Reading states is batched and cached (:class:`JobTable`): one ``squeue`` call answers for every
job of this user at once (``-t all`` keeps jobs that ended in the last ``MinJobAge``
seconds), and ``sacct`` is asked only for jobs ``squeue`` no longer knows, again in one
call. A page that lists 50 runs each second so makes at most one ``squeue`` call per
:data:`TTL_S` seconds, not 50: a cluster's controller is shared.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
import threading
import time
from collections import Counter
from datetime import datetime

from sga_core.params import ConfigError

TOOLS = ("sbatch", "squeue", "sacct", "scancel")
#: seconds a squeue answer serves every reader (the pages refresh each second)
TTL_S = float(os.environ.get("SGA_SLURM_TTL", "5"))
CALL_TIMEOUT_S = 60.0
#: how many times each tool was called by this process (the bench reads it)
CALLS: Counter = Counter()
SQUEUE_FIELDS = ("id", "state", "reason", "node", "submitted", "started", "ended", "name")
SQUEUE_FORMAT = "%i|%T|%r|%N|%V|%S|%e|%j"
SACCT_FORMAT = "JobID,State,Reason,NodeList,Submit,Start,End,JobName"


class SlurmError(ConfigError):
    """A SLURM tool refused or failed; the message is its own error, on one line."""


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


def one_line(text: str) -> str:
    """The line of a tool's output that says what went wrong (its ``error:`` line)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error:" in ln:
            return ln.split("error:", 1)[1].strip()
    return lines[0] if lines else "no output"


def call(tool: str, *args: str, timeout: float = CALL_TIMEOUT_S) -> str:
    """Run ``tool args``; its stdout, or :class:`SlurmError` with its error line."""
    CALLS[tool] += 1
    try:
        out = subprocess.run([tool, *args], capture_output=True, text=True, timeout=timeout,
                             env=tool_env(), stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SlurmError(f"{tool}: not on PATH (no SLURM on this machine)") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{tool}: no answer from the SLURM controller in {timeout:.0f} s") \
            from None
    if out.returncode:
        raise SlurmError(f"{tool}: {one_line(out.stderr or out.stdout)}")
    return out.stdout


def sbatch(script: str, *options: str, test_only: bool = False) -> str:
    """Submit ``script``; returns the job id (``--parsable``). ``test_only``: only check it
    (partition, account, QoS, limits) without submitting."""
    if test_only:
        call("sbatch", "--test-only", *options, script)
        return ""
    return call("sbatch", "--parsable", *options, script).strip().split(";")[0]


def scancel(*job_ids: str) -> None:
    if job_ids:
        call("scancel", *job_ids)


def parse_time(text: str) -> float | None:
    """A SLURM timestamp (2026-11-24T08:01:02) as epoch seconds; None for Unknown/N/A."""
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except (ValueError, AttributeError):
        return None


def _rows(text: str, fields: tuple[str, ...]) -> dict[str, dict]:
    out = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < len(fields):
            continue
        row = dict(zip(fields, (p.strip() for p in parts)))
        row["state"] = row["state"].split()[0] if row["state"] else ""  # "CANCELLED by 0"
        out[row["id"]] = row
    return out


class JobTable:
    """Every job of this user as SLURM sees it, refreshed at most once per ``ttl`` seconds
    for all readers (threads of one server share it)."""

    def __init__(self, ttl: float = TTL_S):
        self.ttl = ttl
        self.lock = threading.Lock()
        self.jobs: dict[str, dict] = {}
        self.taken_at = 0.0
        self.error: str | None = None
        self.accounting: dict[str, dict] = {}
        self.accounting_at = 0.0
        self.accounting_error: str | None = None

    def refresh(self) -> None:
        try:
            text = call("squeue", "-h", "-r", "-t", "all", "-u", getpass.getuser(),
                        "-o", SQUEUE_FORMAT)
            self.jobs, self.error = _rows(text, SQUEUE_FIELDS), None
        except SlurmError as exc:
            self.jobs, self.error = {}, str(exc)
        self.taken_at = time.time()

    def lookup(self, job_id: str, submitted: float | None = None) -> tuple[dict | None, str | None]:
        """``(job, problem)``: SLURM's record of ``job_id`` (None when it knows none), or
        ``problem`` when SLURM could not be asked. A job submitted after the cached answer
        was taken is asked for afresh, so a new job is never reported gone."""
        with self.lock:
            now = time.time()
            if now - self.taken_at > self.ttl or (
                    job_id not in self.jobs and submitted and submitted >= self.taken_at - 1):
                self.refresh()
            if self.error:
                return None, self.error
            if job_id in self.jobs:
                return self.jobs[job_id], None
            return self._from_accounting(job_id), None

    def _from_accounting(self, job_id: str) -> dict | None:
        """A job squeue no longer lists, from ``sacct`` (one call for every such job per
        ``ttl``); None where accounting is off or does not know it either."""
        if job_id not in self.accounting and time.time() - self.accounting_at > self.ttl:
            self.accounting_at = time.time()
            try:
                text = call("sacct", "-X", "-n", "-P", "-u", getpass.getuser(),
                            "-S", "now-14days", "-o", SACCT_FORMAT)
                self.accounting, self.accounting_error = _rows(text, SQUEUE_FIELDS), None
            except SlurmError as exc:  # accounting storage disabled: nothing more to know
                self.accounting, self.accounting_error = {}, str(exc)
        return self.accounting.get(job_id)

    def forget(self) -> None:
        """Drop the cached answers (after a submit or a cancel: the next read asks again)."""
        with self.lock:
            self.taken_at = 0.0
            self.accounting_at = 0.0
            self.accounting = {}


TABLE = JobTable()
