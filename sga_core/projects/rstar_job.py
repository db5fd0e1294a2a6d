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


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def result(project) -> dict | None:
    """The saved result (None when there is none). A damaged result.json (cut off, the wrong
    shape, a value of the wrong type where the page reads it) raises ValueError naming the
    file and what is wrong."""
    where = f"{NAME}/result.json"
    try:
        res = read_json(job_dir(project) / "result.json", default=None)
    except RecursionError:
        raise ValueError(f"{where} is damaged: nested too deeply") from None
    except ValueError as exc:
        raise ValueError(f"{where} is damaged: {exc}") from None
    if res is None:
        return None
    if not isinstance(res, dict):
        raise ValueError(f"{where} is damaged: it must hold an object")
    summary, rows = res.get("summary"), res.get("rows")
    if not isinstance(summary, dict) or not isinstance(rows, list):
        raise ValueError(f"{where} is damaged: it needs a 'summary' object and a 'rows' list")
    for key in ("model", "k", "convention", "subset", "elapsed_s"):
        if key not in res:
            raise ValueError(f"{where} is damaged: '{key}' is missing")
    if summary.get("n"):
        for key in ("n", "n_positive", "n_negative", "median", "q1", "q3"):
            if not _number(summary.get(key)):
                raise ValueError(f"{where} is damaged: summary '{key}' must be a number")
    for i, row in enumerate(rows, start=1):
        if not isinstance(row, dict) or not all(
                k in row for k in ("r_star", "forget_index", "cos_ab", "norm_a", "norm_b")) \
                or not (row["r_star"] is None or _number(row["r_star"])):
            raise ValueError(f"{where} is damaged: row {i} lacks r_star, forget_index, "
                             "cos_ab, norm_a or norm_b, or r_star is not a number")
    return res


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
