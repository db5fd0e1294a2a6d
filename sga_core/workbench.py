"""The facade the browser pages import: one module instead of a dozen, so a page reads as
what it shows. It only re-exports (``tests/repo/test_facade.py``): every name here is defined
in the package that owns it, and nothing here imports torch or Streamlit (the UI process
never loads a model).

What the pages do with these names, the CLI (``python -m sga_core``) does with the same
library functions: the Data page is ``project`` and ``import``; Normal answers,
``normals``; Train, ``prepare`` and ``train`` (``--queue``, ``--seeds``, ``--sweep``,
``--preset``); Runs, ``runs`` and ``eval``; Results, ``results`` (the table, pooled over
seeds, its CSV/JSON download) and ``compare`` (two runs, paired intervals); Token
probabilities, ``probe``; r*, ``rstar``. What only the browser does is the Before / after
probe's free question (:data:`probe`), a run re-run or deleted from the Runs page
(:func:`rerun`, :func:`delete`; from the shell, ``train`` again or remove the folder), one
normal answer edited in place (:func:`save_normals_row`; from the shell, edit the table's
JSONL) and a preset saved (:func:`save_preset`; ``train --preset`` reads any YAML file)."""

from __future__ import annotations

from sga_core.assets import DEMO_PRESET
from sga_core.config import STEP_METRICS, EvalConfig, LaunchConfig, TrainingArgs, dump_config
from sga_core.data import SUPPORTED_EXTENSIONS, DataError, NormalAnswer, NormalTable
from sga_core.data.limits import MAX_K
from sga_core.data.mapping import TARGETS, FieldReport, check_map
from sga_core.fileio import dumps_jsonl
from sga_core.methods import explain_method, get_method, method_names
from sga_core.metrics.catalog import DIRECTIONS, table_columns
from sga_core.metrics.utility_parts import component_label
from sga_core.model.losses import describe_coefficients
from sga_core.normals import backends as normal_backends
from sga_core.normals import get_backend as normal_backend
from sga_core.normals import job as generation
from sga_core.normals.templates import default_template, list_templates
from sga_core.params import ConfigError, field_specs, parse_seeds
from sga_core.presets import list_presets, load_preset, save_preset, validate_preset
from sga_core.projects import (
    Project,
    ProjectError,
    create_demo_project,
    create_project,
    import_job,
    list_projects,
    load_project,
)
from sga_core.projects import probe_job as probe
from sga_core.projects import rstar_job as rstar
from sga_core.projects.benchmarks import benchmark_importers
from sga_core.projects.eval_sets import project_role_words as set_role_words
from sga_core.projects.eval_sets import protocol_gaps, set_kind, set_summary, suggest_set_name
from sga_core.projects.normal_answers import (
    idk_fallback,
    last_generation,
    normals_problems,
    save_normals_row,
)
from sga_core.projects.prepare import PREPARE_DEFAULTS, prepare_defaults
from sga_core.projects.published import in_use_lines, set_published
from sga_core.projects.published import named as published_names
from sga_core.projects.published_eval import (
    evaluate_published,
    evaluated_model,
    evaluation_state,
)
from sga_core.projects.published_eval import row_id as reference_row_id
from sga_core.projects.runs import (
    probe_models,
    reevaluate,
    run_projects,
    runs_missing_sets,
    runs_of,
    runs_other_protocol,
)
from sga_core.projects.study import MODES as STUDY_MODES
from sga_core.projects.study import list_studies, submit_study
from sga_core.projects.train_form import load_train_form, save_train_form
from sga_core.projects.training import (
    build_config,
    cancel_prepare,
    default_eval,
    missing_data,
    original_run_id,
    parse_r_values,
    parse_sweep_values,
    pending_model,
    prepare_plan,
    prepare_refusal,
    prepared_model,
    prepared_reference,
    submit_prepare,
    sweep_default,
)
from sga_core.projects.uploads import (
    add_eval_set,
    import_normals,
    inspect_upload,
    new_project,
)
from sga_core.projects.uploads import import_uploaded_benchmark as import_benchmark
from sga_core.projects.workspace import clean_workspace, ensure_projects
from sga_core.protocols import registered_protocols as protocols
from sga_core.report.collapse import collapse_rule
from sga_core.report.columns import extra_columns, optional_columns, row_columns
from sga_core.report.export import export_csv, export_rows
from sga_core.report.layers import (
    attacked_layer_record,
    layer_facts,
    layer_table,
    layer_words,
    token_position,
)
from sga_core.report.measurable import (
    can_rank,
    difference,
    table_verdict,
    unranked,
    verdict_detail,
    verdict_text,
)
from sga_core.report.paper import paper_columns, paper_groups, paper_table, top_values
from sga_core.report.ranking import best_values
from sga_core.report.run_files import (
    config_diff,
    default_token,
    follow_token,
    per_sample,
    token_table,
    word_token_index,
)
from sga_core.report.seeds import group_display, has_seed_groups
from sga_core.report.stress import recovery_band, stress_table
from sga_core.report.study import curve_series, study_curve
from sga_core.report.sweeps import (
    axis_range,
    r_bands,
    r_groups,
    suggest_r,
    suggestion_text,
    sweep_param_of,
    sweep_series,
)
from sga_core.report.table import (
    display_names,
    project_runs,
    protocol_note,
    results_table,
    summary_of,
)
from sga_core.report.uncertainty import (
    compare_runs,
    fq_resolution,
    fq_resolution_text,
    run_intervals,
)
from sga_core.runs.backends import job_where, sent_to
from sga_core.runs.checkpoints import resume_offer
from sga_core.runs.command import command_text, device_note
from sga_core.runs.create import RunIdTaken, make_run_id
from sga_core.runs.folder import RunFolder, eval_steps, metrics, runs_root, tail
from sga_core.runs.listing import list_runs
from sga_core.runs.progress import (
    curve_names,
    eval_progress,
    eval_status_of,
    fmt_seconds,
    latest_probes,
    not_a_number,
    progress,
    stress_progress,
    typical_eval_seconds,
)
from sga_core.runs.queue import (
    awaiting_evaluation,
    cancel,
    cancel_eval,
    cancel_stress,
    default_attacks,
    delete,
    ensure_runner,
    eval_refusal,
    prepared_role,
    preview,
    queue_stress_tests,
    request_eval,
    request_stress,
    rerun,
    resume,
    stress_candidates,
    stress_originals,
    stress_refusal,
    submit,
)
from sga_core.runs.queue import typed_settings as typed_stress_settings
from sga_core.runs.seeds import queue_sweep, queued_text, submit_seeds
from sga_core.runs.slurm.backend import workspace_preview as slurm_preview
from sga_core.runs.slurm.client import SlurmError
from sga_core.runs.slurm.client import unavailable as slurm_unavailable
from sga_core.runs.slurm.profile import ClusterProfile
from sga_core.runs.slurm.profile import load_profile as load_cluster_profile
from sga_core.runs.slurm.profile import save_profile as save_cluster_profile
from sga_core.runs.validate import Damaged
from sga_core.stress.attacks import attack_names
from sga_core.stress.attacks import form_choices as stress_form_choices
from sga_core.stress.results import attacked_token_tables
from sga_core.stress.settings import settings_class as stress_settings_class
from sga_core.text import plural, printable

__all__ = [
    "STUDY_MODES", "list_studies", "submit_study", "curve_series", "study_curve",
    "ClusterProfile", "SlurmError", "load_cluster_profile", "save_cluster_profile",
    "slurm_preview", "slurm_unavailable", "job_where", "sent_to",
    "ConfigError", "DEMO_PRESET", "DIRECTIONS",
    "Damaged", "DataError", "FieldReport", "LaunchConfig", "MAX_K", "NormalAnswer", "NormalTable",
    "PREPARE_DEFAULTS", "prepare_defaults",
    "in_use_lines", "published_names", "set_published", "evaluate_published",
    "evaluation_state", "evaluated_model", "reference_row_id",
    "Project", "ProjectError", "RunFolder", "STEP_METRICS", "SUPPORTED_EXTENSIONS", "TARGETS",
    "TrainingArgs", "add_eval_set", "awaiting_evaluation", "best_values", "build_config",
    "can_rank", "cancel", "cancel_eval", "difference", "table_verdict", "unranked",
    "verdict_detail", "verdict_text",
    "check_map",
    "clean_workspace",
    "collapse_rule", "command_text", "compare_runs", "component_label", "config_diff",
    "create_demo_project", "create_project", "curve_names", "default_eval", "delete",
    "describe_coefficients", "device_note", "display_names", "dump_config", "dumps_jsonl",
    "ensure_projects", "ensure_runner", "eval_progress", "eval_status_of", "eval_steps",
    "explain_method", "export_csv", "export_rows", "extra_columns", "field_specs", "fmt_seconds",
    "load_train_form", "save_train_form",
    "default_template", "default_token", "follow_token", "fq_resolution", "fq_resolution_text",
    "generation", "get_method",
    "group_display", "has_seed_groups", "idk_fallback", "benchmark_importers", "import_benchmark",
    "import_job",
    "import_normals", "inspect_upload", "last_generation",
    "latest_probes", "list_presets", "list_projects", "list_runs", "list_templates",
    "load_preset", "load_project", "make_run_id", "RunIdTaken", "method_names", "metrics",
    "missing_data",
    "new_project", "normal_backend", "normal_backends", "not_a_number",
    "parse_seeds", "plural",
    "normals_problems", "optional_columns", "original_run_id", "paper_columns", "paper_groups",
    "paper_table",
    "parse_r_values", "parse_sweep_values", "pending_model", "per_sample", "prepared_model",
    "prepared_reference", "prepare_plan", "prepare_refusal",
    "preview", "printable", "probe", "probe_models", "progress", "project_runs", "protocol_note",
    "queue_sweep", "queued_text", "r_bands", "r_groups", "reevaluate", "request_eval", "rerun",
    "eval_refusal", "prepared_role",
    "resume", "resume_offer",
    "recovery_band", "stress_table", "attacked_token_tables",
    "attack_names", "cancel_stress", "default_attacks", "queue_stress_tests", "request_stress",
    "stress_form_choices", "stress_settings_class", "EvalConfig", "set_summary",
    "cancel_prepare", "typed_stress_settings",
    "stress_candidates", "stress_originals", "stress_progress", "stress_refusal",
    "results_table", "row_columns", "rstar", "run_intervals", "run_projects",
    "runs_missing_sets", "runs_of",
    "runs_root", "save_normals_row", "save_preset", "submit", "submit_prepare", "submit_seeds",
    "axis_range", "suggest_r", "suggest_set_name", "suggestion_text", "summary_of", "sweep_default",
    "sweep_param_of", "sweep_series", "table_columns", "tail",
    "token_table", "top_values", "typical_eval_seconds", "validate_preset",
    "word_token_index", "runs_other_protocol", "protocols", "set_role_words", "set_kind",
    "protocol_gaps",
    "attacked_layer_record", "layer_facts", "layer_table", "layer_words", "token_position",
]
