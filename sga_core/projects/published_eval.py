"""The evaluation of a project's published models: the Results table's *Original* and
*Retained* rows when the project takes them from published checkpoints
(docs/guide/published-models.md#their-rows-in-results).

Prepare's two models are run folders, evaluated when they are trained; a published model
has no run folder. Evaluating it makes one: ``<project>-published-original`` (or
``-published-retained``), the project's data snapshot and evaluation settings as any run of
the project, ``model`` a link to the published folder (never a copy: a 1B model is
gigabytes), ``published.json`` saying which model it is, and ``command.sh`` the evaluation's
command. The folder is created complete (nothing to train) and its evaluation is queued as
any run's: the Retained model's first, since the Original's Forget Quality compares with
it.

Which run is the project's Original and Retained row (:func:`reference_rows`): the published
model's evaluation when the project names that model and the folder evaluated that same
model, else Prepare's run. The other folder stays on the Runs page, out of Results.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from sga_core.config import ConfigError
from sga_core.fileio import atomic_write_json, atomic_write_text, remove_dir
from sga_core.projects import published
from sga_core.projects.project import Project
from sga_core.runs import prepared_ids
from sga_core.runs.folder import RunFolder, runs_root

ROLE_IDS = {"original": prepared_ids.PUBLISHED_ORIGINAL,
            "retained": prepared_ids.PUBLISHED_RETAINED}
PREPARED_IDS = {"original": prepared_ids.ORIGINAL, "retained": prepared_ids.RETAIN_REF}
LABELS = {"original": "Original", "retained": "Retained"}


def eval_run_id(project: Project, role: str) -> str:
    """The run id of the evaluation of the project's published ``role`` model."""
    return prepared_ids.prepared_run_id(project.name, ROLE_IDS[role])


def evaluated_model(run_dir: str | os.PathLike) -> dict | None:
    """What a published model's evaluation folder evaluated (``published.json``: role,
    spec, path); None for any other run folder, or where that file is unreadable."""
    return RunFolder(run_dir).published_model()


def _current(project: Project, role: str, root, spec: str | None) -> Path | None:
    """The evaluation folder of the project's published ``role`` model when it evaluated
    ``spec``, the model the project names now; None when none is named, or the folder is of
    another one."""
    run = RunFolder.of(eval_run_id(project, role), root)
    if not spec or not run.path.exists():
        return None
    got = evaluated_model(run.path)
    return run.path if got is not None and got["spec"] == spec else None


def reference_rows(project: Project, root=None) -> dict[str, str]:
    """run id -> "Original" / "Retained": the runs that are the project's reference rows.
    A role the project takes from a published model is that model's evaluation (none while
    it has not been evaluated); any other role is Prepare's run."""
    out, names = {}, published.named(project)
    for role, label in LABELS.items():
        if names.get(role):
            found = _current(project, role, root, names[role])
            if found is not None:
                out[found.name] = label
        else:
            out[prepared_ids.prepared_run_id(project.name, PREPARED_IDS[role])] = label
    return out


def row_id(project: Project, role: str, root=None) -> str | None:
    """The run id of the project's ``role`` ('original' or 'retained') row (None: a
    published model not evaluated yet)."""
    return next((i for i, label in reference_rows(project, root).items()
                 if label == LABELS[role]), None)


def reference_labels(project: Project, root=None) -> dict[str, str]:
    """run id -> label of each of the project's four reference-model folders: "Original"
    and "Retained" for its rows (:func:`reference_rows`), "Original (prepared, not in use)"
    and the like for the others (Results leaves those out: :func:`not_in_use`)."""
    rows = reference_rows(project, root)
    out = {}
    for role, label in LABELS.items():
        for kind, ids in (("prepared", PREPARED_IDS), ("published", ROLE_IDS)):
            run_id = prepared_ids.prepared_run_id(project.name, ids[role])
            out[run_id] = rows.get(run_id) or f"{label} ({kind}, not in use)"
    return out


def not_in_use(labels: dict[str, str]) -> set[str]:
    """The run ids of :func:`reference_labels` that are not the project's rows now."""
    return {run_id for run_id, label in labels.items() if label not in LABELS.values()}


def evaluation_state(project: Project, role: str, root=None) -> str | None:
    """The published ``role`` model's evaluation in words ("evaluated: the Results row
    'Original'", "evaluation queued", ...); None when the project names no such model."""
    from sga_core.runs.listing import eval_state

    spec = published.named(project).get(role)
    if not spec:
        return None
    found = _current(project, role, root, spec)
    if found is None:
        return (f"not evaluated yet: no {LABELS[role]} row in Results (the Data page's "
                "Evaluate the published models, or python -m sga_core project "
                f"evaluate-published {project.name})")
    state = eval_state(found)
    if state == "completed":
        return f"evaluated: Results' {LABELS[role]} row ({found.name})"
    if state in ("queued", "running"):
        return f"evaluation {state} ({found.name})"
    return f"evaluation {state or 'not started'} ({found.name}): evaluate it again"


def _command(run_dir: Path) -> str:
    return ("#!/usr/bin/env bash\n"
            "# The evaluation of a published model (nothing was trained here): evaluate it\n"
            "# again, from the project root, with the same environment.\n"
            "set -euo pipefail\n"
            f"python -m sga_core eval {shlex.quote(str(run_dir))}\n")


def evaluate_published(project: Project, root=None, max_rows: int = 0,
                       backend: str = "local") -> list[Path]:
    """Make the evaluation folder of each published model the project names (the Retained
    model's first) and send its evaluation to ``backend``: this machine's queue, or SLURM
    (a job each, the Original's held until the Retained's ended well); returns the folders.
    A folder of an earlier evaluation is replaced. Refused (ConfigError, saying why, nothing
    changed) when the project names no published model, when one cannot be used now, when
    the backend is not available here, or while a job of one of the folders still runs or
    waits. ``max_rows``: evaluate at most that many rows of each set (``eval.max_rows``;
    0 = all)."""
    from sga_core.model.loading import ModelError
    from sga_core.projects.training import build_config, default_eval
    from sga_core.runs import queue
    from sga_core.runs import status as run_status
    from sga_core.runs.backends import backend as named_backend
    from sga_core.runs.create import create_run

    try:
        chosen = named_backend(backend)
    except (KeyError, ValueError) as exc:
        raise ConfigError(f"backend: {exc}") from None
    if (why := chosen.unavailable()) is not None:
        raise ConfigError(f"cannot send the evaluations to {chosen.label}: {why}")
    root = runs_root(root)
    names = published.named(project)
    roles = [r for r in ("retained", "original") if names.get(r)]
    if not roles:
        raise ConfigError(f"project {project.name} names no published Original or Retained "
                          "model: Prepare's runs are evaluated when they are trained")
    found = {}
    for role in roles:
        try:
            found[role] = published.published(project, role)
        except ModelError as exc:
            raise ConfigError(f"project {project.name}: {exc}") from None
    ids = [eval_run_id(project, r) for r in roles]
    why = queue.busy_refusal(root, ids)
    if why:
        raise ConfigError(why)
    ev = default_eval(project, root)
    if max_rows:
        ev["max_rows"] = int(max_rows)
    cfgs = {role: build_config(
        project, method="finetune", method_args={"include_forget": role == "original"},
        training={}, launch={}, model=str(found[role].path), run_id=eval_run_id(project, role),
        eval_cfg=ev, notes=f"published {LABELS[role]}: {names[role]} (evaluated, not trained)")
        for role in roles}  # every config is checked before a folder is touched
    out, after = [], None
    for role in roles:
        run_dir = root / eval_run_id(project, role)
        if run_dir.exists():
            remove_dir(run_dir)
        what = {"role": role, "spec": names[role], "path": str(found[role].path),
                "source": found[role].describe()}

        def link(tmp, final, cfg, what=what):
            os.symlink(what["path"], RunFolder(tmp).model_dir, target_is_directory=True)
            atomic_write_json(RunFolder(tmp).published_path, what)
            atomic_write_text(RunFolder(tmp).command_path, _command(final))

        # the folder's backend is where its evaluation (and any later one) goes
        run_dir = create_run(cfgs[role], root, state="completed",
                             mode="queue" if chosen.name == "local" else chosen.name,
                             before_claim=link)
        queue.request_eval(run_dir, root, protocol=project.protocol, after=after)
        # SLURM: the Original's job waits for the Retained's (this machine's queue runs
        # them in order)
        after = run_status.read_eval(run_dir).get("slurm_job_id")
        out.append(run_dir)
    return out
