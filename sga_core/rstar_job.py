"""The per-sample r* analysis of a project as a background job (the model lives in the
job process, never in the UI). Results are saved with the project (``rstar/result.json``),
so they show again after a reload."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from sga_core.fileio import atomic_write_json, read_json
from sga_core.runs import now_iso, pid_alive

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def job_dir(project) -> Path:
    return project.path / "rstar"


def status(project) -> dict:
    st = read_json(job_dir(project) / "status.json", default={}) or {}
    if st.get("state") == "running" and not pid_alive(st.get("pid")):
        st.update(state="failed", error=st.get("error") or "the analysis process vanished")
        atomic_write_json(job_dir(project) / "status.json", st)
    return st


def result(project) -> dict | None:
    return read_json(job_dir(project) / "result.json", default=None)


def start(project, model: str, k: int, convention: str = "label", subset: str = "all",
          last_n_layers: int = 0, normals: str | None = None) -> Path:
    if status(project).get("state") == "running":
        raise RuntimeError("an r* analysis is already running for this project")
    d = job_dir(project)
    d.mkdir(parents=True, exist_ok=True)
    spec = {"model": model, "k": int(k), "convention": convention, "subset": subset,
            "last_n_layers": int(last_n_layers),
            "normals": normals or str(project.normals_path)}
    atomic_write_json(d / "spec.json", spec)
    atomic_write_json(d / "status.json", {"state": "running", "done": 0, "total": None,
                                          "started_at": now_iso(), **spec})
    log = open(d / "job.log", "wb")
    try:
        proc = subprocess.Popen([sys.executable, "-m", "sga_core.rstar_job", str(project.path)],
                                cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT),
                                     "PYTHONUNBUFFERED": "1"})
    finally:
        log.close()
    atomic_write_json(d / "status.json", {**read_json(d / "status.json"), "pid": proc.pid})
    return d


def run_job(project_dir: Path) -> int:
    from sga_core.data import NormalTable
    from sga_core.projects import Project
    from sga_core.rstar import run_analysis

    project = Project(project_dir.name, project_dir)
    d = job_dir(project)
    spec = read_json(d / "spec.json")
    st = read_json(d / "status.json", default={})
    try:
        def progress(done, total):
            atomic_write_json(d / "status.json", {**st, "done": done, "total": total,
                                                  "pid": os.getpid()})

        res = run_analysis(spec["model"], project.forget(), NormalTable.load(spec["normals"]),
                           project.kind, spec["k"], spec["convention"], spec["subset"],
                           spec["last_n_layers"], progress=progress)
        res["created_at"] = now_iso()
        atomic_write_json(d / "result.json", res)
        atomic_write_json(d / "status.json", {**st, "state": "completed", "pid": os.getpid(),
                                              "ended_at": now_iso(),
                                              "elapsed_s": res["elapsed_s"]})
        return 0
    except Exception as exc:  # recorded for the page
        atomic_write_json(d / "status.json", {**st, "state": "failed", "pid": os.getpid(),
                                              "error": f"{type(exc).__name__}: {exc}",
                                              "ended_at": now_iso()})
        return 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m sga_core.rstar_job")
    p.add_argument("project_dir")
    return run_job(Path(p.parse_args(argv).project_dir))


if __name__ == "__main__":
    sys.exit(main())
