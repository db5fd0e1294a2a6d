"""Normal-answer generation as a background job of a project, so the browser stays light (no
torch in the UI process) and a reload re-attaches to it.

``workspace/<project>/generation/`` holds ``spec.json`` (backend, options, rows; never the
API key), ``status.json`` (state, done/total, tokens, errors) and ``result.jsonl`` (the new
answers). The key reaches the child only through its environment.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from sga_core.data import NormalTable
from sga_core.fileio import atomic_write_json, read_json
from sga_core.runs import now_iso, pid_alive

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SECRET_OPTIONS = ("api_key",)


def job_dir(project) -> Path:
    return project.path / "generation"


def status(project) -> dict:
    st = read_json(job_dir(project) / "status.json", default={}) or {}
    if st.get("state") == "running" and not pid_alive(st.get("pid")):
        st["state"] = "failed"
        st["error"] = st.get("error") or "the generation process vanished"
        atomic_write_json(job_dir(project) / "status.json", st)
    return st


def start(project, backend: str, k: int, options: dict | None = None,
          rows: list[int] | None = None, api_key: str | None = None) -> Path:
    """Start generating for all forget rows (or ``rows``); refuses while one is running."""
    if status(project).get("state") == "running":
        raise RuntimeError("a generation job is already running for this project")
    options = {k_: v for k_, v in (options or {}).items() if k_ not in SECRET_OPTIONS}
    d = job_dir(project)
    d.mkdir(parents=True, exist_ok=True)
    for name in ("result.jsonl", "status.json"):
        (d / name).unlink(missing_ok=True)
    atomic_write_json(d / "spec.json", {"backend": backend, "k": int(k), "options": options,
                                        "rows": rows, "created_at": now_iso()})
    atomic_write_json(d / "status.json", {"state": "running", "done": 0, "total": None,
                                          "backend": backend, "rows": rows,
                                          "started_at": now_iso()})
    env = {k_: v for k_, v in os.environ.items() if k_ != "OPENAI_API_KEY"}
    if api_key:
        env["OPENAI_API_KEY"] = api_key
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    log = open(d / "job.log", "wb")
    try:
        proc = subprocess.Popen([sys.executable, "-m", "sga_core.normals.job", str(project.path)],
                                cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    finally:
        log.close()
    st = read_json(d / "status.json", default={})
    st["pid"] = proc.pid
    atomic_write_json(d / "status.json", st)
    return d


def result(project) -> NormalTable | None:
    path = job_dir(project) / "result.jsonl"
    return NormalTable.load(path) if path.exists() else None


def merge(current: NormalTable | None, new: NormalTable, rows: list[int] | None) -> NormalTable:
    """The current table with the generated answers of ``rows`` (all rows if None) replaced."""
    keep = [] if current is None else [a for a in current.answers
                                       if rows is not None and a.forget_index not in rows]
    touched = set(rows) if rows is not None else None
    fresh = [a for a in new.answers if touched is None or a.forget_index in touched]
    k = max(new.k, current.k if current is not None and rows is not None else 0)
    return NormalTable(keep + fresh, k)


def run_job(project_dir: Path) -> int:
    from sga_core.normals import generate_normals
    from sga_core.projects import Project

    project = Project(project_dir.name, project_dir)
    d = job_dir(project)
    spec = read_json(d / "spec.json")
    st = read_json(d / "status.json", default={})
    forget = project.forget()
    idx = spec.get("rows") or list(range(len(forget)))
    bad = [i for i in idx if not 0 <= i < len(forget)]
    try:
        if bad:
            raise ValueError(f"forget row {bad[0]} does not exist")

        def progress(done, total):
            atomic_write_json(d / "status.json", {**st, "done": done, "total": total,
                                                  "pid": os.getpid()})

        options = dict(spec.get("options") or {})
        if spec["backend"] == "retrieval":
            options["retain_rows"] = project.retain()
        res = generate_normals(spec["backend"], [forget[i] for i in idx], project.kind,
                               spec["k"], progress=progress, **options)
        # re-number the answers from positions in ``idx`` back to forget rows
        from sga_core.data import NormalAnswer

        answers = [NormalAnswer(**{**a.to_dict(), "forget_index": idx[a.forget_index]})
                   for a in res.table.answers]
        NormalTable(answers, spec["k"]).save(d / "result.jsonl")
        atomic_write_json(d / "status.json", {
            **st, "state": "completed", "done": len(idx), "total": len(idx),
            "errors": {str(idx[i]): e for i, e in res.errors.items()},
            "tokens": res.tokens, "summary": res.summary_lines(),
            "ended_at": now_iso(), "pid": os.getpid()})
        return 0
    except Exception as exc:  # recorded for the page; the key never reaches here
        from sga_core.normals.openai_backend import scrub

        msg = scrub(f"{type(exc).__name__}: {exc}", os.environ.get("OPENAI_API_KEY") or "")
        atomic_write_json(d / "status.json", {**st, "state": "failed", "error": msg,
                                              "ended_at": now_iso(), "pid": os.getpid()})
        return 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m sga_core.normals.job")
    p.add_argument("project_dir")
    return run_job(Path(p.parse_args(argv).project_dir))


if __name__ == "__main__":
    sys.exit(main())
