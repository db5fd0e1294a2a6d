"""Stopping every process a test's pages started. Jobs deliberately outlive the UI (each runs
in its own session), so a test that presses buttons must end them itself: they are found as
the workbench records them, in the status files of the run folders (a training's launcher and
trainer, an evaluation, a stress test) and of the workspace's project jobs (normal answers,
r*, the probe, a benchmark import), and in the queue runner's ``.runner.json``; each is
signalled only while its record proves it is still the same process
(:func:`sga_core.runs.procs.kill_group`). Behind that, any process whose command line names
one of the test's folders (``marks``) is stopped too, for a process started in the instant
before its record was written (a runner stopped between starting a training and recording
its pid)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from sga_core.runs import procs
from sga_core.runs.folder import STATUS, RunFolder
from sga_core.runs.queue import RUNNER_INFO
from sga_core.runs.status import PID_FIELDS
from tests.helpers.wait import wait_for


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recorded(workspace: Path, runs: Path) -> list[dict]:
    """Every process record (:func:`sga_core.runs.procs.record`) the status files under
    ``workspace`` and ``runs`` and the runner's information file keep."""
    files = [Path(runs) / RUNNER_INFO]
    if Path(runs).is_dir():
        for run_dir in Path(runs).iterdir():
            if run_dir.is_dir():
                run = RunFolder(run_dir)
                files += [run.status_path, run.eval_status_path, run.stress_status_path]
    # a project's jobs, and the workspace's import job (its hidden home is a project folder)
    files += sorted(Path(workspace).glob(f"*/*/{STATUS}"))
    return [procs.recorded(st, key) for st in map(_read, files) for key in PID_FIELDS
            if st.get(key)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            "utf-8", "replace").strip()
    except OSError:
        return ""


def strays(marks) -> list[dict]:
    """Processes of this user whose command line names one of ``marks`` (besides this
    process and its parent)."""
    mine, out = {os.getpid(), os.getppid()}, []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        cmd = _cmdline(int(entry.name))
        if any(str(m) in cmd for m in marks):
            out.append(procs.record(int(entry.name)))
    return out


def running(workspace: Path, runs: Path, marks=(), keep=()) -> list[dict]:
    """The processes of the test that still run (records, with ``cmd`` their command line),
    but for the pids in ``keep``."""
    live = {r["pid"]: r for r in reversed(recorded(workspace, runs) + strays(marks))
            if r["pid"] not in keep and procs.is_ours(r)}
    return [{**r, "cmd": _cmdline(r["pid"])} for r in reversed(live.values())]


def stop_all(workspace: Path, runs: Path, marks=(), keep=(), timeout: float = 20.0
             ) -> list[str]:
    """SIGKILL every process of the test (their process groups: a launcher takes its
    trainer along) except the pids in ``keep``; the runner first, so that it starts no
    more. Returns the command lines of the processes stopped; RuntimeError when one still
    lives after ``timeout`` seconds (TimeoutError)."""
    stopped: dict[tuple, str] = {}
    live: list[dict] = []

    def all_stopped() -> bool:
        live[:] = running(workspace, runs, marks, keep)
        for rec in live:
            if procs.kill_group(rec, signal.SIGKILL) or procs.signal_ours(rec, signal.SIGKILL):
                stopped.setdefault((rec["pid"], rec["start"]), rec["cmd"])
        return not live

    wait_for(all_stopped, timeout, lambda: f"every process of the test to stop; still "
                                           f"running: {[r['cmd'] for r in live]}", interval=0.1)
    return list(stopped.values())
