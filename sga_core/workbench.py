"""The facade the browser pages import: one module instead of a dozen, so a page reads as
what it shows. Everything here is also reachable from the CLI; nothing here imports torch or
Streamlit (the UI process never loads a model)."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import yaml

from sga_core.assets import DEMO_PRESET, PRESETS_DIR
from sga_core.config import STEP_METRICS, LaunchConfig, TrainingArgs, dump_config
from sga_core.data import SUPPORTED_EXTENSIONS, DataError, NormalAnswer, NormalTable
from sga_core.data.limits import MAX_K
from sga_core.data.mapping import TARGETS, FieldReport, check_map, inspect_fields
from sga_core.fileio import atomic_write_text, dumps_jsonl
from sga_core.methods import get_method, method_names
from sga_core.metrics.catalog import DIRECTIONS, table_columns
from sga_core.metrics.utility_parts import component_label
from sga_core.model.loading import is_model_folder
from sga_core.model.losses import describe_coefficients
from sga_core.normals import backends as normal_backends
from sga_core.normals import get_backend as normal_backend
from sga_core.normals import job as generation
from sga_core.normals.idk import idk_normals
from sga_core.normals.templates import list_templates
from sga_core.params import ConfigError, field_specs, from_dict, parse_seeds
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
from sga_core.projects.eval_sets import suggest_set_name
from sga_core.projects.prepare import PREPARE_DEFAULTS
from sga_core.projects.train_form import load_train_form, save_train_form
from sga_core.projects.training import (
    build_config,
    default_eval,
    original_run_id,
    parse_r_values,
    parse_sweep_values,
    pending_model,
    prepared_model,
    prepared_reference,
    submit_prepare,
    sweep_default,
)
from sga_core.report.collapse import collapse_rule
from sga_core.report.columns import extra_columns, row_columns
from sga_core.report.export import export_csv, export_rows
from sga_core.report.paper import paper_columns, paper_groups, paper_table, top_values
from sga_core.report.run_files import (
    config_diff,
    follow_token,
    per_sample,
    token_table,
    word_token_index,
)
from sga_core.report.seeds import group_display, has_seed_groups
from sga_core.report.sweeps import (
    r_bands,
    r_groups,
    suggest_r,
    suggestion_text,
    sweep_param_of,
    sweep_series,
)
from sga_core.report.table import (
    best_values,
    display_names,
    project_runs,
    results_table,
    summary_of,
)
from sga_core.report.uncertainty import (
    compare_runs,
    fq_resolution,
    fq_resolution_text,
    run_intervals,
)
from sga_core.runs.command import command_text
from sga_core.runs.folder import RunIdTaken, list_runs, make_run_id, metrics, runs_root, tail
from sga_core.runs.leftovers import clean_leftovers, clean_temp_leftovers, temp_dir
from sga_core.runs.progress import (
    curve_names,
    eval_progress,
    fmt_seconds,
    latest_probes,
    progress,
    typical_eval_seconds,
)
from sga_core.runs.queue import (
    awaiting_evaluation,
    cancel,
    cancel_eval,
    delete,
    ensure_runner,
    request_eval,
    rerun,
    submit,
)
from sga_core.runs.seeds import queued_text, submit_seeds, sweep_configs, sweep_name
from sga_core.runs.validate import Damaged
from sga_core.text import plural, printable

__all__ = [
    "ConfigError", "DEMO_PRESET", "DIRECTIONS",
    "Damaged", "DataError", "FieldReport", "LaunchConfig", "MAX_K", "NormalAnswer", "NormalTable",
    "PREPARE_DEFAULTS",
    "Project", "ProjectError", "STEP_METRICS", "SUPPORTED_EXTENSIONS", "TARGETS",
    "TrainingArgs", "add_eval_set", "awaiting_evaluation", "best_values", "build_config",
    "cancel", "cancel_eval",
    "check_map",
    "clean_workspace",
    "collapse_rule", "command_text", "compare_runs", "component_label", "config_diff",
    "create_demo_project", "create_project", "curve_names", "default_eval", "delete",
    "describe_coefficients", "device_note", "display_names", "dump_config", "dumps_jsonl",
    "ensure_projects", "ensure_runner", "eval_progress", "eval_status_of", "eval_steps",
    "explain_method", "export_csv", "export_rows", "extra_columns", "field_specs", "fmt_seconds",
    "load_train_form", "save_train_form",
    "follow_token", "fq_resolution", "fq_resolution_text", "generation", "get_method",
    "group_display", "has_seed_groups", "idk_fallback", "benchmark_importers", "import_benchmark",
    "import_normals", "inspect_upload", "last_generation",
    "latest_probes", "list_presets", "list_projects", "list_runs", "list_templates",
    "load_preset", "load_project", "make_run_id", "RunIdTaken", "method_names", "metrics",
    "new_project", "normal_backend", "normal_backends",
    "parse_seeds", "plural",
    "normals_problems", "original_run_id", "paper_columns", "paper_groups", "paper_table",
    "parse_r_values", "parse_sweep_values", "pending_model", "per_sample", "prepared_model",
    "prepared_reference",
    "preview", "printable", "probe", "probe_models", "progress", "project_runs", "protocol_note",
    "queue_sweep", "queued_text", "r_bands", "r_groups", "reevaluate", "request_eval", "rerun",
    "results_table", "row_columns", "rstar", "run_intervals", "run_projects",
    "runs_missing_sets", "runs_of",
    "runs_root", "save_normals_row", "save_preset", "submit", "submit_prepare", "submit_seeds",
    "suggest_r", "suggest_set_name", "suggestion_text", "summary_of", "sweep_default",
    "sweep_param_of", "sweep_series", "table_columns", "tail",
    "token_table", "top_values", "typical_eval_seconds", "validate_preset",
    "word_token_index",
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
                overwrite: bool = False,
                field_maps: dict[str, dict[str, str]] | None = None) -> Project:
    """A project from uploaded files ({"forget": (file name, bytes), "retain": ...}), each
    file's fields renamed by its mapping (``field_maps[role]``, remembered with the project);
    a bad file raises DataError naming the user's file (never a temporary path), nothing is
    written."""
    with temp_dir("upload") as tmp:
        paths = {role: _upload_path(tmp, role, filename, data)
                 for role, (filename, data) in uploads.items()}
        return create_project(name, paths["forget"], paths.get("retain"), kind=kind,
                              overwrite=overwrite, field_maps=field_maps)


def _upload_path(tmp: str, role: str, filename: str, data: bytes) -> Path:
    """An upload written under its own name (errors name the user's file)."""
    path = Path(tmp) / role / Path(filename).name
    path.parent.mkdir()
    path.write_bytes(data)
    return path


def inspect_upload(filename: str, data: bytes, kind: str = "auto",
                   mapping: dict[str, str] | None = None) -> FieldReport:
    """The fields of an uploaded file, the required ones it lacks for ``kind`` after
    ``mapping``, and suggested mappings (DataError when the file itself cannot be read)."""
    with temp_dir("upload") as tmp:
        return inspect_fields(_upload_path(tmp, "inspect", filename, data), kind, mapping)


def add_eval_set(project: Project, name: str, filename: str, data: bytes,
                 field_map: dict[str, str] | None = None, replace: bool = False) -> dict:
    """Add an uploaded evaluation set to the project (validated like forget data; DataError
    naming the user's file, nothing saved); returns its entry (name, rows, role, ...)."""
    with temp_dir("upload") as tmp:
        return project.add_eval_set(name, _upload_path(tmp, "set", filename, data),
                                    field_map=field_map, source=Path(filename).name,
                                    replace=replace)


def runs_missing_sets(project: Project, root=None) -> dict[str, list[str]]:
    """Evaluated runs of the project (run id -> names) that were evaluated without some of
    its current evaluation sets (added later)."""
    root = runs_root(root)
    current = set(project.eval_sets())
    out = {}
    for r in project_runs(project, root):
        summ = summary_of(Path(r["path"]))
        if summ is None or r["state"] != "completed" or r.get("eval_state") in ("queued",
                                                                                "running"):
            continue
        have = set((summ.get("data") or {}).get("sets") or {})
        if current - have:
            out[r["run_id"]] = sorted(current - have)
    return out


def reevaluate(project: Project, run_ids: list[str], root=None) -> None:
    """Queue the evaluation of these runs again, with the project's current evaluation
    sets besides their own."""
    root = runs_root(root)
    sets = {name: str(path) for name, path in project.eval_sets().items()}
    for run_id in run_ids:
        request_eval(root / run_id, root, sets=sets)


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


def eval_status_of(runs: list[dict], only: str | None = None) -> dict[str, dict]:
    """run id -> its evaluation's progress and ETA (``sga_core.runs.progress.eval_progress``), the
    ETA from the median time of these runs' finished evaluations (``only``: just that
    run's)."""
    typical = typical_eval_seconds(r["path"] for r in runs)
    return {r["run_id"]: eval_progress(r["path"], typical) for r in runs
            if only is None or r["run_id"] == only}


# --- benchmarks (sga_core.data.hub, sga_core.projects.benchmarks) ----------------------------

def benchmark_importers() -> list:
    """Every importable benchmark (:mod:`sga_core.projects.benchmarks`' registry), in the
    order the Data page offers them."""
    from sga_core.projects.benchmarks import IMPORTERS

    return list(IMPORTERS.values())


def import_benchmark(benchmark: str, name: str | None = None, options: dict | None = None, *,
                     uploads: dict[str, tuple[str, bytes]] | None = None,
                     overwrite: bool = False) -> Project:
    """A ready project from a registered benchmark with its import ``options``; ``uploads``
    ({option: (file name, bytes)}) are its text files, written to a temporary folder for the
    import (the copyright task's book and retain text). ``datasets`` is imported only when a
    hub benchmark runs."""
    from sga_core.projects.benchmarks import import_with

    options = dict(options or {})
    with temp_dir("upload") as tmp:
        for role, (filename, data) in (uploads or {}).items():
            path = Path(tmp) / role / Path(filename).name
            path.parent.mkdir()
            path.write_bytes(data)
            options[role] = str(path)
        return import_with(benchmark, name or None, options, overwrite=overwrite)


def protocol_note(rows: list[dict]) -> str | None:
    """What the Results table's numbers were evaluated under: each protocol's one line (the
    demo's says its settings are its own, not comparable with published tables)."""
    from sga_core.protocols import get_protocol

    names = sorted({r.get("protocol") or "demo" for r in rows})
    return " · ".join(get_protocol(n).describe() for n in names) if names else None


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
    with temp_dir("upload") as tmp:
        path = Path(tmp) / Path(filename).name
        path.write_bytes(data)
        return project.import_normals(path, k=k, name=Path(filename).name)


def clean_workspace() -> list[Path]:
    """Remove what killed processes left behind in the workspace and the runs folder
    (partial project or run folders, temporary files) once they are an hour old, and the
    system temporary folders of processes that are gone."""
    from sga_core.projects import workspace_root

    return clean_leftovers(workspace_root(), runs_root()) + clean_temp_leftovers()


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


MAX_PRESET_NAME = 64


# letters of other scripts drawn like a Latin letter (after case folding): Cyrillic and
# Greek capitals and small letters that a reader cannot tell from a, b, c, e, ... ('mуrun'
# with a Cyrillic 'у' is 'myrun' in the Load preset list)
LOOK_ALIKES = str.maketrans({
    "\u0430": "a", "\u0432": "b", "\u0435": "e", "\u043a": "k", "\u043c": "m",
    "\u043d": "h", "\u043e": "o", "\u0440": "p", "\u0441": "c", "\u0442": "t",
    "\u0443": "y", "\u0445": "x", "\u0456": "i", "\u0458": "j", "\u0455": "s",
    "\u0501": "d", "\u051b": "q", "\u051d": "w", "\u04bb": "h", "\u04cf": "l",
    "\u03b1": "a", "\u03b2": "b", "\u03b5": "e", "\u03b7": "h", "\u03b9": "i",
    "\u03ba": "k", "\u03bc": "m", "\u03bd": "v", "\u03bf": "o", "\u03c1": "p",
    "\u03c4": "t", "\u03c5": "u", "\u03c7": "x", "\u03b6": "z", "\u0251": "a",
    "\u0131": "i", "\u0261": "g",
})


def preset_key(name: str) -> str:
    """What two preset names must not share: their NFKC form, case-folded, with letters of
    other scripts drawn like Latin ones read as those ('Demo', 'DEMO', the full-width
    'ｄｅｍｏ' and 'dеmo' with a Cyrillic 'е' are one name to a reader)."""
    return unicodedata.normalize("NFKC", name).casefold().translate(LOOK_ALIKES)


def save_preset(project: Project, name: str, cfg) -> Path:
    """Save a config as a preset of the project (without its run id, data and sweep). A name
    longer than MAX_PRESET_NAME, or one another preset's differs from only in case or by
    look-alike characters, is a ConfigError (saving under the same name replaces it)."""
    clean = "".join(ch for ch in name if ch.isalnum() or ch in "-_") or "preset"
    if len(clean) > MAX_PRESET_NAME:
        raise ConfigError(f"preset name {clean[:40]!r}... is {len(clean)} characters long; "
                          f"at most {MAX_PRESET_NAME} are allowed")
    for other in list_presets(project):
        if other.stem != clean and preset_key(other.stem) == preset_key(clean):
            raise ConfigError(f"preset name {clean!r} differs from the existing preset "
                              f"{other.stem!r} only in case or by look-alike characters; "
                              f"choose another name, or save as {other.stem!r} to replace it")
    data = cfg.to_dict()
    for key in ("run_id", "data", "sweep", "group"):
        data.pop(key, None)
    path = project.path / "presets" / f"{clean}.yaml"
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False))
    return path


def device_note(launch: dict) -> str:
    """Where a run with these launch settings trains, in words, with what this machine has
    (found without torch): the Train page's device line."""
    from sga_core.model.device import describe, gpu_hint

    la = {**{s["name"]: s["default"] for s in field_specs(LaunchConfig)}, **(launch or {})}
    if la.get("cpu"):
        la["device"] = "cpu"
    return "Device: " + describe(la["device"], la["mixed_precision"], la.get("config_file"),
                                 gpu=gpu_hint())


def preview(cfg, root=None) -> tuple[str, str, str]:
    """(run id, the exact launch command, config.yaml) of a config about to be launched."""
    root = runs_root(root)
    cfg.run_id = cfg.run_id or make_run_id(cfg, root)
    return cfg.run_id, command_text(cfg, root / cfg.run_id), dump_config(cfg)


def queue_sweep(make_cfg, values: list[float], name: str, root=None) -> tuple[str, list[Path]]:
    """Queue one run per value (``make_cfg(sweep_group, value)`` builds each config) as one
    sweep group, each repeated over its seeds (``training.seeds``: one seed group per
    value); returns the sweep's name and the run folders."""
    group = sweep_name(name)
    return group, [submit(c, root) for c in sweep_configs(make_cfg, values, group, root)]


def probe_models(project: Project, root=None) -> dict[str, str]:
    """Models the probe can ask: the Original, then every run of the project with a model."""
    root = runs_root(root)
    out = {}
    original = prepared_model(project, root)
    if original:
        out["Original"] = str(original)
    for r in project_runs(project, root):
        model = root / r["run_id"] / "model"
        if r["run_id"] != original_run_id(project) and is_model_folder(model):
            out[r["run_id"]] = str(model)
    return out


def eval_steps(run_dir) -> list[dict]:
    """A run's evaluations during training (``eval_steps.jsonl``), oldest first."""
    from sga_core.runs.folder import eval_steps as checked

    return checked(run_dir)
