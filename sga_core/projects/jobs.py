"""Background jobs of a project (normal-answer generation, r* analysis, before/after probes,
benchmark imports): each a kind of :data:`sga_core.runs.jobs.KINDS` (``where="project"``),
through the one job lifecycle. ``workspace/<project>/<name>/`` holds ``spec.json`` (never a
secret), ``status.json`` (state running/completed/failed, progress, error) and the job's
results. The job runs as ``python -m <module> <project_dir>`` in its own session, so the UI
process never loads a model and a reload re-attaches to it."""

from __future__ import annotations

import os
from pathlib import Path

from sga_core.fileio import atomic_write_bytes, atomic_write_json, now_iso, read_json
from sga_core.runs.jobs import base as lifecycle
from sga_core.runs.jobs import kind


def job_dir(project, name: str) -> Path:
    return project.path / name


def status(project, name: str) -> dict:
    """The job's status; a 'running' job whose process is gone is shown as failed."""
    return kind(name).effective(job_dir(project, name))


def update(project, name: str, state: str | None = None, **fields) -> dict:
    return kind(name).write(job_dir(project, name), state, **fields)


def start(project, name: str, module: str, spec: dict, env: dict | None = None,
          clear: tuple[str, ...] = (), files: dict[str, bytes] | None = None) -> Path:
    """Start the project job ``name`` (its kind: :data:`sga_core.runs.jobs.KINDS`; it runs
    ``python -m module <project_dir>``) through the one job lifecycle
    (:func:`sga_core.runs.jobs.base.start`); refuses while this job is running. ``env``
    entries (secrets) go to the child's environment only; ``clear`` lists result files of a
    previous run to delete first; ``files`` (name -> bytes) are written into the job's
    folder before it starts (a snapshot the job compares against when it ends)."""
    k = kind(name)
    if k.module != module:
        raise ValueError(f"the {k.name} job runs {k.module}, not {module}")
    if status(project, name).get("state") == "running":
        raise RuntimeError(f"a {name} job is already running for this project")
    d = job_dir(project, name)
    d.mkdir(parents=True, exist_ok=True)
    for f in clear:
        (d / f).unlink(missing_ok=True)
    for f, data in (files or {}).items():
        atomic_write_bytes(d / f, data)
    atomic_write_json(k.request_path(d), {**spec, "created_at": now_iso()})
    lifecycle.start(k, d, spec, env=env, done=0, total=None, **spec)
    return d


def spec(project, name: str) -> dict:
    try:  # a damaged spec (cut off, nested too deeply) describes no job
        data = read_json(job_dir(project, name) / "spec.json", default={})
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


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

    from sga_core.projects.project import Project

    p = argparse.ArgumentParser()
    p.add_argument("project_dir")
    path = Path(p.parse_args(argv).project_dir)
    return Project(path.name, path)


def run_job(name: str, work, argv=None, scrub=None) -> int:
    """The body of a job module's ``main``: ``work(project, spec)`` does the job and returns
    the fields that complete its status; an exception fails the job with its message
    (passed through ``scrub``, which removes secrets). Returns the process exit code."""
    project = project_from_argv(argv)
    try:
        fields = work(project, spec(project, name)) or {}
    except Exception as exc:  # recorded for the page
        message = f"{type(exc).__name__}: {exc}"
        fail(project, name, scrub(message) if scrub else message)
        return 1
    complete(project, name, **fields)
    return 0
