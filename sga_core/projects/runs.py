"""A project's runs: which runs belong to which project (the same forget rows), the runs
evaluated before the project gained an evaluation set (and their evaluation queued again),
and the models the probe can ask."""

from __future__ import annotations

from pathlib import Path

from sga_core.projects.listing import list_projects, load_project
from sga_core.projects.project import Project, ProjectError
from sga_core.projects.published_eval import row_id
from sga_core.projects.training import original_run_id, prepared_model
from sga_core.report.table import project_runs, summary_of
from sga_core.runs.folder import RunFolder, runs_root
from sga_core.runs.listing import list_runs
from sga_core.runs.queue import request_eval


def runs_of(project: Project | None, root=None) -> list[dict]:
    """The runs the Runs page lists: the project's (same forget rows), or every run."""
    return project_runs(project, root) if project is not None else list_runs(root)


def run_projects(runs: list[dict]) -> dict[str, str]:
    """run id -> the project(s) whose forget rows it trained on ("-": none, or a run made
    before runs recorded their data's hash)."""
    owners: dict[str, list[str]] = {}
    for name in list_projects():
        try:
            owners.setdefault(load_project(name).forget_hash, []).append(name)
        except ProjectError:
            continue
    return {r["run_id"]: ", ".join(owners.get(r.get("forget_hash") or "", [])) or "-"
            for r in runs}


def _evaluated(project: Project, root=None):
    """(run row, its evaluation summary) of each completed run of the project whose
    evaluation is done (none queued or running)."""
    for r in project_runs(project, runs_root(root)):
        summ = summary_of(Path(r["path"]))
        if summ is not None and r["state"] == "completed" and \
                r.get("eval_state") not in ("queued", "running"):
            yield r, summ


def runs_missing_sets(project: Project, root=None) -> dict[str, list[str]]:
    """Evaluated runs of the project (run id -> names) that were evaluated without some of
    its current evaluation sets (added later)."""
    current = set(project.eval_sets())
    out = {}
    for r, summ in _evaluated(project, root):
        have = set((summ.get("data") or {}).get("sets") or {})
        if current - have:
            out[r["run_id"]] = sorted(current - have)
    return out


def runs_other_protocol(project: Project, root=None) -> dict[str, str]:
    """Evaluated runs of the project (run id -> protocol) whose evaluation was under
    another protocol than the project's current one."""
    out = {}
    for r, summ in _evaluated(project, root):
        used = (summ.get("protocol") or {}).get("name") or "demo"
        if used != project.protocol:
            out[r["run_id"]] = used
    return out


def reevaluate(project: Project, run_ids: list[str], root=None) -> dict[str, str]:
    """Queue the evaluation of these runs again, with the project's current evaluation
    sets besides their own, under the project's evaluation protocol. A run whose evaluation
    could only fail (an evaluation set of its own gone, no model:
    :func:`sga_core.runs.queue.eval_refusal`) is skipped; returns them, run id -> why."""
    root = runs_root(root)
    sets = {name: str(path) for name, path in project.eval_sets().items()}
    skipped = {}
    for run_id in run_ids:
        try:
            request_eval(root / run_id, root, sets=sets, protocol=project.protocol)
        except ValueError as exc:
            skipped[run_id] = str(exc)
    return skipped


def probe_models(project: Project, root=None) -> dict[str, str]:
    """Models the probe can ask: the Original, then every run of the project with a model."""
    root = runs_root(root)
    out = {}
    original = prepared_model(project, root)
    if original:
        out["Original"] = str(original)
    same = {original_run_id(project), row_id(project, "original", root)}  # the Original's
    for r in project_runs(project, root):
        run = RunFolder.of(r["run_id"], root)
        if r["run_id"] not in same and run.has_model():
            out[r["run_id"]] = str(run.model_dir)
    return out
