"""The per-sample r* analysis of a project as a background job (see sga_core.bgjob); the
result is saved with the project (``rstar/result.json``) and shows again after a reload."""

from __future__ import annotations

import sys

from sga_core import bgjob
from sga_core.fileio import atomic_write_json, read_json
from sga_core.runs import now_iso

NAME = "rstar"


def job_dir(project):
    return bgjob.job_dir(project, NAME)


def status(project) -> dict:
    return bgjob.status(project, NAME)


def result(project) -> dict | None:
    return read_json(job_dir(project) / "result.json", default=None)


def start(project, model: str, k: int, convention: str = "label", subset: str = "all",
          last_n_layers: int = 0, normals: str | None = None):
    return bgjob.start(project, NAME, "sga_core.rstar_job", {
        "model": model, "k": int(k), "convention": convention, "subset": subset,
        "last_n_layers": int(last_n_layers), "normals": normals or str(project.normals_path)})


def main(argv=None) -> int:
    from sga_core.data import NormalTable
    from sga_core.rstar import run_analysis

    project = bgjob.project_from_argv(argv)
    spec = bgjob.spec(project, NAME)
    try:
        res = run_analysis(spec["model"], project.forget(), NormalTable.load(spec["normals"]),
                           project.kind, spec["k"], spec["convention"], spec["subset"],
                           spec["last_n_layers"],
                           progress=bgjob.progress_callback(project, NAME))
        res["created_at"] = now_iso()
        atomic_write_json(job_dir(project) / "result.json", res)
        bgjob.complete(project, NAME, elapsed_s=res["elapsed_s"])
        return 0
    except Exception as exc:  # recorded for the page
        bgjob.fail(project, NAME, f"{type(exc).__name__}: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
