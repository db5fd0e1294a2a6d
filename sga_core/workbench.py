"""The facade the browser pages import: one module instead of a dozen, so a page reads as
what it shows. Everything here is also reachable from the CLI; nothing here imports torch or
Streamlit (the UI process never loads a model)."""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

import yaml

from sga_core.assets import DEMO_PRESET, PRESETS_DIR
from sga_core.config import LaunchConfig, TrainingArgs, dump_config
from sga_core.data import SUPPORTED_EXTENSIONS, DataError, NormalAnswer, NormalTable
from sga_core.data.limits import MAX_K
from sga_core.fileio import atomic_write_text, dumps_jsonl
from sga_core.leftovers import clean_leftovers
from sga_core.live import fmt_seconds, latest_probes, progress, tokens_html
from sga_core.methods import get_method, method_names
from sga_core.metrics.catalog import DIRECTIONS
from sga_core.model.losses import describe_coefficients
from sga_core.normals import BACKEND_DESCRIPTIONS
from sga_core.normals import job as generation
from sga_core.normals.idk import idk_normals
from sga_core.normals.templates import list_templates
from sga_core.paper_table import paper_columns, paper_groups, paper_table, top_values
from sga_core.params import ConfigError, field_specs, from_dict
from sga_core.presets import load_preset, validate_preset
from sga_core.projects import (
    Project,
    ProjectError,
    create_demo_project,
    create_project,
    list_projects,
    load_project,
)
from sga_core.projects import probe_job as probe
from sga_core.projects import rstar_job as rstar
from sga_core.projects.training import (
    build_config,
    default_eval,
    original_run_id,
    parse_r_values,
    pending_model,
    prepared_model,
    prepared_reference,
    submit_prepare,
)
from sga_core.results import (
    best_values,
    config_diff,
    display_names,
    follow_token,
    per_sample,
    project_runs,
    r_groups,
    results_table,
    sweep_series,
    table_columns,
    token_table,
    word_token_index,
)
from sga_core.runs.command import command_text
from sga_core.runs.folder import list_runs, make_run_id, metrics, runs_root, tail
from sga_core.runs.queue import cancel, delete, ensure_runner, request_eval, rerun, submit

__all__ = [
    "BACKEND_DESCRIPTIONS", "ConfigError", "DEMO_PRESET", "DIRECTIONS", "DataError",
    "LaunchConfig", "MAX_K", "NormalAnswer", "NormalTable", "Project", "ProjectError",
    "SUPPORTED_EXTENSIONS", "TrainingArgs", "best_values", "build_config", "cancel",
    "clean_workspace", "command_text", "config_diff", "create_demo_project", "create_project",
    "default_eval", "delete", "describe_coefficients", "display_names", "dump_config",
    "dumps_jsonl", "ensure_projects", "ensure_runner", "explain_method", "field_specs",
    "fmt_seconds", "follow_token", "generation", "get_method", "idk_fallback",
    "import_normals", "last_generation", "latest_probes", "list_presets", "list_projects",
    "list_runs", "list_templates", "load_preset", "load_project", "make_run_id",
    "method_names", "metrics", "new_project", "normals_problems", "original_run_id",
    "paper_columns", "paper_groups", "paper_table", "parse_r_values", "pending_model",
    "per_sample", "prepared_model", "prepared_reference",
    "preview", "probe", "probe_models", "progress", "project_runs", "queue_sweep", "r_groups",
    "request_eval", "rerun", "results_table", "rstar", "runs_root", "save_normals_row",
    "save_preset", "submit", "submit_prepare", "sweep_series", "table_columns", "tail",
    "token_table", "tokens_html", "top_values", "validate_preset", "word_token_index",
]


# --- projects --------------------------------------------------------------------------------

def ensure_projects() -> list[str]:
    """The projects in the workspace; on a first start the built-in demo is created."""
    names = list_projects()
    if not names:
        create_demo_project()
        names = list_projects()
    return names


def new_project(name: str, uploads: dict[str, tuple[str, bytes]], kind: str = "auto",
                overwrite: bool = False) -> Project:
    """A project from uploaded files ({"forget": (file name, bytes), "retain": ...}); a bad
    file raises DataError naming the user's file (never a temporary path), nothing is
    written."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for role, (filename, data) in uploads.items():
            paths[role] = Path(tmp) / role / Path(filename).name
            paths[role].parent.mkdir()
            paths[role].write_bytes(data)
        return create_project(name, paths["forget"], paths.get("retain"), kind=kind,
                              overwrite=overwrite)


# --- normal answers --------------------------------------------------------------------------

def normals_problems(project: Project, k: int | None = None) -> tuple[NormalTable | None,
                                                                      list[str]]:
    """The project's normal-answer table and what keeps it from training with K = ``k``."""
    table = project.normals()
    if table is None:
        return None, ["no normal answers yet"]
    problems = table.problems(len(project.forget()))
    if k is not None and table.k < k:
        problems.insert(0, f"the table has {table.k - 1} normal answers per row, K={k} "
                           f"needs {k - 1}")
    return table, problems


def last_generation(project: Project) -> dict:
    """The settings of the project's last normal-answer generation ({} if none)."""
    from sga_core.projects import jobs

    return jobs.spec(project, generation.NAME)


def idk_fallback(project: Project, k: int) -> str:
    """A table of generated "I don't know" answers for the project (a training fallback)."""
    path = project.path / "idk_normals.jsonl"
    idk_normals(len(project.forget()), max(2, k)).save(path)
    return str(path)


def save_normals_row(project: Project, row: int, texts: list[str],
                     current: list[NormalAnswer]) -> None:
    """Save the edited answers of one forget row (a locked read-change-write, so a job that
    saved meanwhile is kept); unchanged answers keep their source and score."""
    def change(latest: NormalTable | None) -> NormalTable:
        base = latest or NormalTable(current, max([2] + [a.k + 1 for a in current]))
        answers = [a for a in base.answers if a.forget_index != row]
        for j, text in enumerate(texts, start=1):
            old = current[j - 1] if j - 1 < len(current) else None
            if old is not None and old.text == text:
                answers.append(NormalAnswer(row, j, text, old.source, old.score, old.edited,
                                            old.updated_at))
            else:
                answers.append(NormalAnswer(row, j, text, "manual", None, True))
        return NormalTable(answers, max([base.k] + [a.k + 1 for a in answers]))

    project.update_normals(change, reason=f"edit row {row}")


def import_normals(project: Project, filename: str, data: bytes, k: int | None = None
                   ) -> NormalTable:
    """Replace the table with an uploaded one (the old one stays in the history); every k
    and forget_index is checked against the project (K = ``k``, default the project's)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(filename).name
        path.write_bytes(data)
        return project.import_normals(path, k=k, name=Path(filename).name)


def clean_workspace() -> list[Path]:
    """Remove what killed processes left behind in the workspace and the runs folder
    (partial project or run folders, temporary files) once they are an hour old."""
    from sga_core.projects import workspace_root

    return clean_leftovers(workspace_root(), runs_root())


# --- training --------------------------------------------------------------------------------

def list_presets(project: Project) -> list[Path]:
    """Shipped presets, then the project's own."""
    return sorted(PRESETS_DIR.glob("*.yaml")) + sorted((project.path / "presets").glob("*.yaml"))


def explain_method(name: str, args: dict) -> str | None:
    """A method's settings in words (SGA: its coefficients), None when it has none or the
    settings are not valid yet."""
    cls = get_method(name)
    try:
        return cls(from_dict(cls.Config, args)).explain()
    except (ConfigError, ValueError):
        return None


def save_preset(project: Project, name: str, cfg) -> Path:
    """Save a config as a preset of the project (without its run id, data and sweep)."""
    clean = "".join(ch for ch in name if ch.isalnum() or ch in "-_") or "preset"
    data = cfg.to_dict()
    for key in ("run_id", "data", "sweep"):
        data.pop(key, None)
    path = project.path / "presets" / f"{clean}.yaml"
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False))
    return path


def preview(cfg, root=None) -> tuple[str, str, str]:
    """(run id, the exact launch command, config.yaml) of a config about to be launched."""
    root = runs_root(root)
    cfg.run_id = cfg.run_id or make_run_id(cfg, root)
    return cfg.run_id, command_text(cfg, root / cfg.run_id), dump_config(cfg)


def queue_sweep(make_cfg, values: list[float], name: str, root=None) -> tuple[str, list[Path]]:
    """Queue one run per value (``make_cfg(sweep_group, value)`` builds each config) as one
    sweep group; returns the group's name and the run folders."""
    group = f"{name or 'sweep'}-{datetime.now():%Y%m%d-%H%M%S}"
    return group, [submit(make_cfg(group, v), root) for v in values]


def probe_models(project: Project, root=None) -> dict[str, str]:
    """Models the probe can ask: the Original, then every run of the project with a model."""
    root = runs_root(root)
    out = {}
    original = prepared_model(project, root)
    if original:
        out["Original"] = str(original)
    for r in project_runs(project, root):
        model = root / r["run_id"] / "model"
        if r["run_id"] != original_run_id(project) and (model / "config.json").exists():
            out[r["run_id"]] = str(model)
    return out
