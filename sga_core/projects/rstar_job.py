"""The per-sample r* analysis of a project as a background job (see sga_core.projects.jobs); the
result is saved with the project (``rstar/result.json``) and shows again after a reload."""

from __future__ import annotations

import sys

from sga_core.fileio import atomic_write_json, now_iso, read_json
from sga_core.projects import jobs as bgjob

NAME = "rstar"


def job_dir(project):
    return bgjob.job_dir(project, NAME)


def status(project) -> dict:
    return bgjob.status(project, NAME)


def result(project) -> dict | None:
    return read_json(job_dir(project) / "result.json", default=None)


def start(project, model: str, k: int, convention: str = "label", subset: str = "all",
          last_n_layers: int = 0, normals: str | None = None):
    return bgjob.start(project, NAME, "sga_core.projects.rstar_job", {
        "model": model, "k": int(k), "convention": convention, "subset": subset,
        "last_n_layers": int(last_n_layers), "normals": normals or str(project.normals_path)})


def analyse(project, spec: dict) -> dict:
    from sga_core.data import NormalTable
    from sga_core.methods.sga.rstar import run_analysis

    res = run_analysis(spec["model"], project.forget(), NormalTable.load(spec["normals"]),
                       project.kind, spec["k"], spec["convention"], spec["subset"],
                       spec["last_n_layers"], progress=bgjob.progress_callback(project, NAME))
    res["created_at"] = now_iso()
    atomic_write_json(job_dir(project) / "result.json", res)
    return {"elapsed_s": res["elapsed_s"]}


def main(argv=None) -> int:
    return bgjob.run_job(NAME, analyse, argv)


if __name__ == "__main__":
    sys.exit(main())
