"""A project's Original and Retained models from published checkpoints, and a retain
model's published evaluation logs as its reference, instead of Prepare's two runs
(docs/guide/published-models.md).

``project.json`` ``published`` holds what the project names (each optional)::

    {"original": "open-unlearning/tofu_Llama-3.2-1B-Instruct_full",   # hub id or folder
     "retained": "open-unlearning/tofu_Llama-3.2-1B-Instruct_retain90",
     "reference_logs": "/data/saves/eval/tofu_Llama-3.2-1B-Instruct_retain90/TOFU_EVAL.json"}

Which of each is in use (:func:`models_in_use`): the Original a run unlearns is the
published one when named, else Prepare's; the retain reference (Forget Quality, PrivLeak) is
the eval log when named, else the published Retained model, else Prepare's. A hub id is
found in the local Hugging Face cache (downloaded only when the user allows it), and is
checked as a loadable causal LM when it is set (:mod:`sga_core.model.published`); an eval
log is checked against the project's rows (:mod:`sga_core.evaluation.ou_logs`). Nothing
here loads a model.
"""

from __future__ import annotations

from pathlib import Path

from sga_core.evaluation.ou_logs import LogError, attack_auc, read_logs, truth_ratios
from sga_core.model.loading import ModelError
from sga_core.model.published import Published, published_model
from sga_core.projects.project import Project, ProjectError

KEY = "published"
ROLES = {"original": "Original (the model to unlearn)",
         "retained": "Retained (the retain reference model)",
         "reference_logs": "retain reference eval log"}
CLEAR = ("", "prepared", "none")  # what unsets a role (Prepare's is used again)


def named(project: Project) -> dict[str, str]:
    """What the project names ({role: spec}; absent roles are Prepare's)."""
    got = project.meta.get(KEY)
    if not isinstance(got, dict):
        return {}
    return {r: str(v) for r, v in got.items() if r in ROLES and isinstance(v, str) and v}


def published(project: Project, role: str) -> Published | None:
    """The project's published ``role`` ('original' or 'retained') resolved offline, or
    None when it names none; ModelError when it names one that cannot be used now."""
    spec = named(project).get(role)
    return published_model(spec, role=ROLES[role]) if spec else None


def _usable(project: Project, role: str) -> Path | None:
    try:
        found = published(project, role)
    except ModelError:
        return None
    return found.path if found else None


def published_original(project: Project) -> Path | None:
    """The folder of the project's published Original (None: none named, or unusable)."""
    return _usable(project, "original")


def published_reference(project: Project) -> Path | None:
    """The published retain reference: the eval log, else the Retained model's folder."""
    logs = named(project).get("reference_logs")
    if logs:
        return Path(logs)
    return _usable(project, "retained")


def _project_rows(project: Project):
    """The rows the project's runs are evaluated on (a benchmark's forget_eval replaces the
    forget rows), as :func:`~sga_core.evaluation.rows.eval_rows` gives them."""
    from sga_core.evaluation.rows import eval_rows

    return eval_rows(project.forget_path, project.retain_path if project.retain_path.exists()
                     else None, project.eval_sets(), project.kind)


def check_logs(project: Project, path: str) -> str:
    """Check an eval log against the project's rows; returns what it gives (a sentence);
    LogError says what is wrong (another benchmark, split, rows)."""
    logs = read_logs(path)
    data = _project_rows(project)
    if project.kind == "qa":
        n = len(truth_ratios(logs, data.forget))
        extra = f"; MIA AUCs of {', '.join(sorted(logs.aucs))}" if logs.aucs else ""
        return f"{logs.name}: the retain model's forget truth ratios of {n} rows{extra}"
    if project.protocol == "copyright":
        raise LogError("open-unlearning's logs hold no copyright-task completion scores: use "
                       "a retain model (a folder or hub id) as the reference")
    holdout = data.sets.get("holdout") or []
    if not holdout:
        raise LogError("the project has no holdout set, so no MIA AUC or PrivLeak to "
                       "compare: import MUSE's privleak holdout (or add a 'holdout' set)")
    auc = attack_auc(logs, "mia_auc", len(data.forget), len(holdout))
    return (f"{logs.name}: the retain model's Min-K% AUC {auc:.4f} (OU's members: MUSE's "
            "privleak forget passages)")


def set_published(project: Project, *, original: str | None = None,
                  retained: str | None = None, reference_logs: str | None = None,
                  online: bool = False) -> dict[str, str]:
    """Name (or, with '' / 'prepared', unset) the project's published Original, Retained
    model and reference eval log; each is checked before anything is written (a hub id
    downloaded only when ``online``). Returns the project's settings; ProjectError names the
    role and what is wrong."""
    out = named(project)
    for role, spec in (("original", original), ("retained", retained),
                       ("reference_logs", reference_logs)):
        if spec is None:
            continue
        spec = str(spec).strip()
        if spec.lower() in CLEAR:
            out.pop(role, None)
            continue
        try:
            if role == "reference_logs":
                check_logs(project, spec)
                spec = str(Path(spec).expanduser().resolve())
            else:
                spec = stored_spec(published_model(spec, online=online, role=ROLES[role]))
        except (ModelError, ValueError) as exc:  # LogError, or the project's data's
            what = str(exc) if role != "reference_logs" else f"{ROLES[role]}: {exc}"
            raise ProjectError(f"project {project.name}: {what}") from None
        out[role] = spec
    check_distinct(project.name, out)
    project.update_meta(**{KEY: out})
    return out


def stored_spec(found: Published) -> str:
    """How ``project.json`` names a checked model: a hub id as given, a folder by its
    resolved path (so two paths of one folder are one model)."""
    return found.spec if found.source == "hub id" else str(found.path)


def check_distinct(name: str, specs: dict) -> None:
    """ProjectError when ``specs`` (role -> :func:`stored_spec`) names one model as both
    the Original and the Retained."""
    if specs.get("original") and specs.get("original") == specs.get("retained"):
        raise ProjectError(
            f"project {name}: the Original and the Retained model are the same model "
            f"({specs['original']}): Forget Quality would compare the model with itself. "
            "The Retained model is one trained without the forget set (TOFU's retain90, "
            "MUSE's retrain)")


def run_of(folder: str | Path) -> str | None:
    """The run whose model ``folder`` is (``<runs>/<id>/model``, as given or once links
    are followed), else None: such a folder is replaced when that run is prepared or
    re-run again, and is gone when it is deleted."""
    from sga_core.runs.folder import model_owner

    given = Path(folder).expanduser()
    for path in dict.fromkeys((given.absolute(), given.resolve())):
        if (run := model_owner(path)) is not None:
            return run.path.name
    return None


def _prepared(project: Project, role: str, root=None) -> dict:
    """Prepare's run of ``role``: its model when it has one, else whether it is queued or
    running."""
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.prepared_ids import original_id, reference_id
    from sga_core.runs.status import effective_run

    run = RunFolder.of((original_id if role == "original" else reference_id)(project.name),
                       root)
    if run.has_model():
        return {"source": "prepared", "where": str(run.model_dir if role == "original"
                                                   else run.path), "problem": None}
    busy = run.path.exists() and effective_run(run.path).get("state") in ("queued", "running")
    return {"source": "preparing" if busy else "none", "where": str(run.path) if busy else None,
            "problem": None}


def models_in_use(project: Project, root=None) -> dict[str, dict]:
    """Which Original, Retained model and reference the project's runs use, each
    ``{"source": 'published id' | 'folder' | 'eval log' | 'prepared' | 'preparing' |
    'none', "where": path or id, "problem": why a named one cannot be used}``."""
    names = named(project)
    out: dict[str, dict] = {}
    for role in ("original", "retained"):
        if not names.get(role):
            out[role] = _prepared(project, role, root)
            continue
        try:
            found = published(project, role)
            out[role] = {"source": "published id" if found.source == "hub id" else "folder",
                         "where": found.describe(), "problem": None}
            run = run_of(names[role]) if found.source != "hub id" else None
            if run:
                out[role]["note"] = (f"the model of run {run}: preparing or re-running that "
                                     "run replaces it, deleting it removes it")
        except ModelError as exc:
            out[role] = {"source": "published id", "where": names[role], "problem": str(exc)}
    logs = names.get("reference_logs")
    if logs:
        try:
            problem, what = None, check_logs(project, logs)
        except (ValueError, OSError) as exc:  # the log's, or the project's data's (DataError)
            problem, what = str(exc), None
        out["reference"] = {"source": "eval log", "where": f"{logs} ({what})" if what else logs,
                            "problem": problem}
    else:
        out["reference"] = dict(out["retained"])
    return out


WORDS = {"published id": "published checkpoint", "folder": "published checkpoint (folder)",
         "eval log": "published eval log", "prepared": "prepared (Prepare's run)",
         "preparing": "being prepared", "none": "none yet (Prepare on the Train page, or "
                                                "name a published one)"}


def in_use_lines(project: Project, root=None) -> list[str]:
    """One line per role saying which model or log is in use, and any problem."""
    used = models_in_use(project, root)
    lines = []
    for role, label in (("original", "Original"), ("retained", "Retained"),
                        ("reference", "Reference (Forget Quality, PrivLeak)")):
        u = used[role]
        where = f": {u['where']}" if u["where"] else ""
        lines.append(f"{label}: {WORDS[u['source']]}{where}"
                     + (f" - cannot be used: {u['problem']}" if u["problem"] else "")
                     + (f" - note: {u['note']}" if u.get("note") else ""))
    return lines
