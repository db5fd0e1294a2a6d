"""Turning a project plus form values into run configs, sweeps and queued jobs: the logic
behind the Train page, kept here so the page stays thin and the CLI can share it."""

from __future__ import annotations

import math
import re
from pathlib import Path

from sga_core.config import ConfigError, TrainConfig
from sga_core.fileio import remove_dir
from sga_core.model.loading import is_model_folder
from sga_core.projects import published
from sga_core.projects.project import Project
from sga_core.runs import prepared_ids
from sga_core.runs.folder import RunFolder, runs_root


def original_run_id(project: Project) -> str:
    return prepared_ids.original_id(project.name)


def reference_run_id(project: Project) -> str:
    return prepared_ids.reference_id(project.name)


def prepared_model(project: Project, root=None) -> Path | None:
    """The project's original model folder: its published Original when it names one
    (:mod:`~sga_core.projects.published`; None while that cannot be used), else the one
    ``prepare`` has produced, if any."""
    if published.named(project).get("original"):
        return published.published_original(project)
    path = RunFolder.of(original_run_id(project), root).model_dir
    return path if is_model_folder(path) else None


def pending_model(project: Project, root=None) -> Path | None:
    """The original's model folder while its prepare run is queued or running (a run queued
    now starts after it, the queue being one job at a time by default)."""
    from sga_core.runs.status import effective_run

    run_dir = runs_root(root) / original_run_id(project)
    if published.named(project).get("original") or prepared_model(project, root) or \
            not run_dir.exists():
        return None
    state = effective_run(run_dir).get("state")
    return RunFolder(run_dir).model_dir if state in ("queued", "running") else None


def cancel_prepare(project: Project, root=None) -> list[str]:
    """Cancel the project's Prepare as a whole: both its runs (the retain reference and the
    original) where they are queued or running, so that cancelling one never lets the other
    start. Returns the run ids asked to stop."""
    from sga_core.runs import queue
    from sga_core.runs.status import effective_run

    out = []
    for run_id in (reference_run_id(project), original_run_id(project)):
        run_dir = runs_root(root) / run_id
        if run_dir.exists() and effective_run(run_dir).get("state") in ("queued", "running"):
            queue.cancel(run_dir)
            out.append(run_id)
    return out


def prepared_reference(project: Project, root=None) -> Path | None:
    """The project's retain reference: its published eval log or Retained model when it
    names one (:func:`~sga_core.projects.published.published_reference`), else Prepare's
    retain-reference run once it has its model."""
    names = published.named(project)
    if names.get("reference_logs") or names.get("retained"):
        return published.published_reference(project)
    run = RunFolder.of(reference_run_id(project), root)
    return run.path if run.has_model() else None


MAX_SWEEP_RUNS = 100


def _number(token: str, what: str) -> float:
    try:
        value = float(token)
    except ValueError:
        raise ConfigError(f"sweep: {what} {token.strip()[:40]!r} is not a number") from None
    if not math.isfinite(value):
        raise ConfigError(f"sweep: {what} {token.strip()[:40]!r} is not a finite number")
    return value


def sweep_bounds(method: str) -> tuple[str, float | None, float | None, float]:
    """The setting a sweep of ``method`` varies, with its bounds and default (from its
    :func:`~sga_core.params.param` metadata); ConfigError for a method without one."""
    from sga_core.methods import get_method
    from sga_core.params import field_specs

    cls = get_method(method)
    if not cls.sweep_param:
        raise ConfigError(f"sweep: method {method!r} has no sweep setting")
    spec = next(s for s in field_specs(cls.Config) if s["name"] == cls.sweep_param)
    return cls.sweep_param, spec.get("min"), spec.get("max"), spec["default"]


def sweep_default(method: str) -> str:
    """The values the Train page's sweep box offers first for ``method``: the method's own
    list, else its setting's default with half and twice it, kept within the bounds."""
    from sga_core.methods import get_method

    if get_method(method).sweep_default:
        return get_method(method).sweep_default
    _, lo, hi, default = sweep_bounds(method)
    values = [default / 2, default, default * 2] if default else [0.0, 0.5, 1.0]
    values = [min(max(v, lo if lo is not None else v), hi if hi is not None else v)
              for v in values]
    return ", ".join(f"{v:g}" for v in dict.fromkeys(values))


def parse_sweep_values(text: str, method: str = "sga") -> list[float]:
    """Values of ``method``'s sweep setting (SGA: r; Task Vector, WHP: alpha): a list
    ``-1, -0.5, 0, 0.4`` or a range ``start:stop:step`` (inclusive); at most
    ``MAX_SWEEP_RUNS`` values, each finite and within the setting's bounds. Anything else
    (``0:inf:1``, ``nan``, a step of 0 or one that never reaches stop) is a ConfigError."""
    name, lo, hi, _ = sweep_bounds(method)
    text = (text or "").strip()
    if not text:
        example = sweep_default(method).split(", ")
        raise ConfigError(f"sweep: enter {name} values, e.g. '{', '.join(example[:3])}' or "
                          f"'{example[0]}:{example[-1]}:...'")
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise ConfigError(f"sweep: range {text[:60]!r} must be start:stop:step")
        start, stop, step = (_number(p, what) for p, what in zip(parts, ("start", "stop",
                                                                         "step")))
        if step == 0 or (stop - start) / step < 0:
            raise ConfigError(f"sweep: step {step!r} never reaches {stop!r} from {start!r}")
        count = (stop - start) / step  # inf when it overflows
        n = int(round(count)) + 1 if count < MAX_SWEEP_RUNS else MAX_SWEEP_RUNS + 1
        if n > MAX_SWEEP_RUNS:
            raise ConfigError(f"sweep: {start!r}:{stop!r}:{step!r} makes more than "
                              f"{MAX_SWEEP_RUNS} runs (at most {MAX_SWEEP_RUNS})")
        values = [round(start + i * step, 10) for i in range(n)]
    else:
        tokens = [tok for tok in re.split(r"[,\s;]+", text) if tok]
        values = list(dict.fromkeys(_number(tok, "value") for tok in tokens))
        if not values:
            example = sweep_default(method).split(", ")
            raise ConfigError(f"sweep: {text[:60]!r} holds no {name} values; enter them as "
                              f"'{', '.join(example[:3])}' or "
                              f"'{example[0]}:{example[-1]}:...'")
        if len(values) > MAX_SWEEP_RUNS:
            raise ConfigError(f"sweep: {len(values)} runs is too many (at most "
                              f"{MAX_SWEEP_RUNS})")
    above = [v for v in values if hi is not None and v > hi]
    if above:
        raise ConfigError(f"sweep: {name} must be <= {hi!r}, got {above[0]!r}")
    below = [v for v in values if lo is not None and v < lo]
    if below:
        raise ConfigError(f"sweep: {name} must be >= {lo!r}, got {below[0]!r}")
    return list(dict.fromkeys(values))


def parse_r_values(text: str) -> list[float]:
    """SGA's sweep values (r): :func:`parse_sweep_values` for method sga."""
    return parse_sweep_values(text, "sga")


def missing_data(project: Project, method: str, method_args: dict,
                 normals: str | None) -> str | None:
    """What ``method`` trains on that the project cannot give it yet, in the user's words
    and with how to get it (None: nothing is missing, or the method is unknown)."""
    from sga_core.methods import REGISTRY

    cls = REGISTRY.get(method)
    if cls is None:
        return None  # TrainConfig names an unknown method
    name = (cls.title or method).split(" (")[0]
    if "normals" in cls.needs and not normals:
        from sga_core.projects.normal_answers import normals_problems

        why = "; ".join(normals_problems(project, method_args.get("k"))[1][:3])
        how = ("Generate them on the Normal answers page, or tick \"use generated 'I don't "
               "know' normal answers instead\" on the Train page." if cls.idk_normals else
               "Generate alternate answers on the Normal answers page with the "
               "altpo_alternate template ('I don't know' refusals cannot stand in).")
        return (f"{name} trains on normal answers (K-1 for each forget row), and project "
                f"{project.name}'s are not ready{f' ({why})' if why else ''}. {how}")
    if "retain" in cls.needs and not project.retain_path.exists():
        return (f"{name} trains on retain rows, and project {project.name} has no retain "
                "data. Create the project again with a retain file (Data page), or choose a "
                "method that needs none.")
    return None


def build_config(project: Project, *, method: str, method_args: dict, training: dict,
                 launch: dict, model: str, run_id: str = "", sweep: str | None = None,
                 normals: str | None = None, eval_cfg: dict | None = None,
                 notes: str = "") -> TrainConfig:
    """A validated TrainConfig for a project's data (data files are snapshotted into the run
    folder when it is created); data the method needs and the project lacks is refused in
    the user's words (:func:`missing_data`)."""
    missing = missing_data(project, method, method_args, normals)
    if missing:
        raise ConfigError(missing)
    data = {"task": project.kind, "forget": str(project.forget_path)}
    if project.retain_path.exists():
        data["retain"] = str(project.retain_path)
    if normals:
        data["normals"] = str(normals)
    raw = {"run_id": run_id, "model": model, "method": method, "method_args": method_args,
           "data": data, "training": training, "launch": launch, "sweep": sweep,
           "notes": notes}
    if eval_cfg is not None:
        raw["eval"] = eval_cfg
    return TrainConfig.from_dict(raw)


def default_eval(project: Project, root=None, enabled: bool = True) -> dict:
    """Evaluation settings for a project's runs: its extra sets, its retain reference and its
    evaluation protocol (an imported benchmark's own; the demo's otherwise)."""
    ref = prepared_reference(project, root)
    names = published.named(project)
    if ref is None and not (names.get("reference_logs") or names.get("retained")) and \
            (runs_root(root) / reference_run_id(project)).exists():
        ref = runs_root(root) / reference_run_id(project)  # queued or training: used later
    return {"enabled": enabled, "reference": str(ref) if ref else None,
            "sets": {name: str(path) for name, path in project.eval_sets().items()},
            "protocol": project.meta.get("protocol") or "demo"}


def prepare_refusal(project: Project) -> str | None:
    """Why Prepare cannot run for ``project`` (None: it can): the retain reference is
    fine-tuned on the retain rows, so a project without them has nothing to prepare it
    from."""
    n = project.meta.get("n_retain")
    if not (n if isinstance(n, int) else len(project.retain())):
        return (f"project {project.name} has no retain rows: Prepare fine-tunes the retain "
                "reference (the model Forget Quality and PrivLeak compare with) on them. "
                "Create the project again with a retain file (Data page), or name a "
                "published Original and Retained model (Data page, Published models)")
    return None


def submit_prepare(project: Project, model: str = "embedded:smollm2", root=None,
                   training: dict | None = None, backend: str = "local",
                   max_rows: int = 0) -> list[Path]:
    """Queue the project's two prepare runs (retain reference, then original) on the
    backend named ``backend``, as a chain: on this machine's queue in that order, or as two
    SLURM jobs, the original's held until the reference's ended well. ``max_rows``: each
    evaluation set's row limit (``eval.max_rows``, the Train page's; 0 = all)."""

    from sga_core.projects.prepare import prepare_defaults
    from sga_core.runs import queue as jobs

    why = prepare_refusal(project)
    if why:
        raise ConfigError(why)
    root = runs_root(root)
    cfgs = []
    pair = ((reference_run_id(project), False), (original_run_id(project), True))
    # neither folder is touched while anything of either still runs or waits
    why = jobs.busy_refusal(root, [run_id for run_id, _ in pair])
    if why:
        raise ConfigError(why)
    # the reference first: the original's Forget Quality compares against it
    for run_id, include_forget in pair:
        if (root / run_id).exists():
            remove_dir(root / run_id)  # a late status write of its ended job is no error
        cfg = build_config(project, method="finetune",
                           method_args={"include_forget": include_forget},
                           training={**prepare_defaults(project.kind), **(training or {})},
                           launch={},
                           model=model, run_id=run_id,
                           eval_cfg={**default_eval(project, root),
                                     "reference": str(root / reference_run_id(project)),
                                     **({"max_rows": int(max_rows)} if max_rows else {})},
                           notes="prepare: " + ("original" if include_forget else
                                                "retain reference"))
        cfgs.append(cfg)
    from sga_core.runs.backends import backend as named

    return named(backend).launch(cfgs, root, chain=True)


def prepare_plan(project: Project, training: dict, root=None) -> dict:
    """What Prepare would run with ``training``: its steps ({"original": n, "retain-ref":
    m}, :func:`~sga_core.projects.prepare.prepare_steps`), their sum, and ``step_s``, the
    median seconds a step took in this project's earlier prepare runs (a cancelled one
    counts; None when none took a step), with ``eta_s`` = steps x step_s."""
    from statistics import median

    from sga_core.projects.prepare import prepare_steps
    from sga_core.runs.folder import metrics
    from sga_core.runs.validate import Damaged

    meta = project.meta
    n_forget = meta.get("n_forget") if isinstance(meta.get("n_forget"), int) else \
        len(project.forget())
    n_retain = meta.get("n_retain") if isinstance(meta.get("n_retain"), int) else \
        len(project.retain())
    steps = prepare_steps(n_forget, n_retain, training)
    gaps = []
    for run_id in (reference_run_id(project), original_run_id(project)):
        run_dir = runs_root(root) / run_id
        try:
            rows = [r for r in metrics(run_dir) if isinstance(r.get("elapsed_s"), (int, float))]
        except (Damaged, OSError):  # a damaged run gives no figure
            rows = []
        gaps += [(b["elapsed_s"] - a["elapsed_s"]) / (b["step"] - a["step"])
                 for a, b in zip(rows, rows[1:]) if b["step"] > a["step"]]
    step_s = median(gaps) if gaps else None
    total = sum(steps.values())
    return {"steps": steps, "total": total, "step_s": step_s,
            "eta_s": total * step_s if step_s is not None else None}
