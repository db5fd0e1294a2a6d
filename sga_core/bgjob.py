"""Background jobs of a project (normal-answer generation, r* analysis, before/after probes):
``workspace/<project>/<name>/`` holds ``spec.json`` (never a secret), ``status.json``
(state running/completed/failed, progress, error) and the job's results. The job runs as
``python -m <module> <project_dir>`` in its own session, so the UI process never loads a
model and a reload re-attaches to it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from sga_core.fileio import atomic_write_json, read_json
from sga_core.runs import now_iso, pid_alive

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def background_argv(argv: list[str]) -> list[str]:
    """``argv`` at a lower CPU priority (``nice -n $SGA_JOB_NICE``, default 10; 0 = off):
    background jobs (and the runner, whose training and evaluation processes inherit it)
    then never starve the browser's server of the CPU."""
    try:
        level = int(os.environ.get("SGA_JOB_NICE", "10"))
    except ValueError:
        level = 10
    nice = shutil.which("nice")
    return [nice, "-n", str(level), *argv] if level > 0 and nice else list(argv)


def job_dir(project, name: str) -> Path:
    return project.path / name


def status(project, name: str) -> dict:
    """The job's status; a 'running' job whose process is gone is reported failed."""
    path = job_dir(project, name) / "status.json"
    st = read_json(path, default={}) or {}
    if st.get("state") == "running" and not pid_alive(st.get("pid")):
        st.update(state="failed", error=st.get("error") or "the job's process vanished")
        atomic_write_json(path, st)
    return st


def update(project, name: str, **fields) -> dict:
    path = job_dir(project, name) / "status.json"
    st = {**(read_json(path, default={}) or {}), **fields}
    atomic_write_json(path, st)
    return st


def start(project, name: str, module: str, spec: dict, env: dict | None = None,
          clear: tuple[str, ...] = ()) -> Path:
    """Start ``python -m module <project_dir>``; refuses while this job is running.
    ``env`` entries (secrets) go to the child's environment only; ``clear`` lists result
    files of a previous run to delete first."""
    if status(project, name).get("state") == "running":
        raise RuntimeError(f"a {name} job is already running for this project")
    d = job_dir(project, name)
    d.mkdir(parents=True, exist_ok=True)
    for f in ("status.json",) + clear:
        (d / f).unlink(missing_ok=True)
    atomic_write_json(d / "spec.json", {**spec, "created_at": now_iso()})
    atomic_write_json(d / "status.json", {"state": "running", "done": 0, "total": None,
                                          "started_at": now_iso(), **spec})
    child_env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    child_env.update(env or {})
    child_env.update(PYTHONPATH=str(PROJECT_ROOT), PYTHONUNBUFFERED="1")
    log = open(d / "job.log", "wb")
    try:
        proc = subprocess.Popen(background_argv([sys.executable, "-m", module,
                                                 str(project.path)]),
                                cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=child_env,
                                start_new_session=True)
    finally:
        log.close()
    update(project, name, pid=proc.pid)
    return d


def spec(project, name: str) -> dict:
    return read_json(job_dir(project, name) / "spec.json", default={}) or {}


def progress_callback(project, name: str, **fields):
    """``progress(done, total)`` that records the counts (and ``fields``) in status.json."""
    def progress(done, total):
        update(project, name, done=done, total=total, pid=os.getpid(), **fields)
    return progress


def complete(project, name: str, **fields) -> dict:
    return update(project, name, state="completed", ended_at=now_iso(), pid=os.getpid(),
                  **fields)


def fail(project, name: str, error: str) -> dict:
    return update(project, name, state="failed", ended_at=now_iso(), pid=os.getpid(),
                  error=error)


def project_from_argv(argv=None):
    """The project a job module was started for (its one argument)."""
    import argparse

    from sga_core.projects import Project

    p = argparse.ArgumentParser()
    p.add_argument("project_dir")
    path = Path(p.parse_args(argv).project_dir)
    return Project(path.name, path)
