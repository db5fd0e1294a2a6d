"""Turning a project plus form values into run configs, sweeps and queued jobs: the logic
behind the Train page, kept here so the page stays thin and the CLI can share it."""

from __future__ import annotations

import math
import re
from pathlib import Path

from sga_core.config import ConfigError, TrainConfig
from sga_core.model.loading import is_model_folder
from sga_core.projects.project import Project
from sga_core.runs import prepared_ids
from sga_core.runs.folder import runs_root


def original_run_id(project: Project) -> str:
    return prepared_ids.original_id(project.name)


def reference_run_id(project: Project) -> str:
    return prepared_ids.reference_id(project.name)


def prepared_model(project: Project, root=None) -> Path | None:
    """The project's prepared original model folder, if ``prepare`` has produced it."""
    path = runs_root(root) / original_run_id(project) / "model"
    return path if is_model_folder(path) else None


def pending_model(project: Project, root=None) -> Path | None:
    """The original's model folder while its prepare run is queued or running (a run queued
    now starts after it, the queue being one job at a time by default)."""
    from sga_core.runs.status import effective_run

    run_dir = runs_root(root) / original_run_id(project)
    if prepared_model(project, root) or not run_dir.exists():
        return None
    state = effective_run(run_dir).get("state")
    return run_dir / "model" if state in ("queued", "running") else None


def prepared_reference(project: Project, root=None) -> Path | None:
    path = runs_root(root) / reference_run_id(project)
    return path if is_model_folder(path / "model") else None


MAX_SWEEP_RUNS = 100


def _number(token: str, what: str) -> float:
    try:
        value = float(token)
    except ValueError:
        raise ConfigError(f"sweep: {what} {token.strip()[:40]!r} is not a number") from None
    if not math.isfinite(value):
        raise ConfigError(f"sweep: {what} {token.strip()[:40]!r} is not a finite number")
    return value


def parse_r_values(text: str) -> list[float]:
    """Sweep values: a list ``-1, -0.5, 0, 0.4`` or a range ``start:stop:step`` (inclusive);
    at most ``MAX_SWEEP_RUNS`` values, each finite and <= 1. Anything else (``0:inf:1``,
    ``nan``, a step of 0 or one that never reaches stop) is a ConfigError."""
    text = (text or "").strip()
    if not text:
        raise ConfigError("sweep: enter r values, e.g. '-1, -0.5, 0' or '-1:0.4:0.2'")
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise ConfigError(f"sweep: range {text[:60]!r} must be start:stop:step")
        start, stop, step = (_number(p, what) for p, what in zip(parts, ("start", "stop",
                                                                         "step")))
        if step == 0 or (stop - start) / step < 0:
            raise ConfigError(f"sweep: step {step:g} never reaches {stop:g} from {start:g}")
        count = (stop - start) / step  # inf when it overflows
        n = int(round(count)) + 1 if count < MAX_SWEEP_RUNS else MAX_SWEEP_RUNS + 1
        if n > MAX_SWEEP_RUNS:
            raise ConfigError(f"sweep: {start:g}:{stop:g}:{step:g} makes more than "
                              f"{MAX_SWEEP_RUNS} runs (at most {MAX_SWEEP_RUNS})")
        values = [round(start + i * step, 10) for i in range(n)]
    else:
        tokens = [tok for tok in re.split(r"[,\s;]+", text) if tok]
        values = list(dict.fromkeys(_number(tok, "value") for tok in tokens))
        if len(values) > MAX_SWEEP_RUNS:
            raise ConfigError(f"sweep: {len(values)} runs is too many (at most "
                              f"{MAX_SWEEP_RUNS})")
    bad = [v for v in values if v > 1]
    if bad:
        raise ConfigError(f"sweep: r must be <= 1, got {bad[0]:g}")
    return list(dict.fromkeys(values))


def build_config(project: Project, *, method: str, method_args: dict, training: dict,
                 launch: dict, model: str, run_id: str = "", sweep: str | None = None,
                 normals: str | None = None, eval_cfg: dict | None = None,
                 notes: str = "") -> TrainConfig:
    """A validated TrainConfig for a project's data (data files are snapshotted into the run
    folder when it is created)."""
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
    if ref is None and (runs_root(root) / reference_run_id(project)).exists():
        ref = runs_root(root) / reference_run_id(project)  # queued or training: used later
    return {"enabled": enabled, "reference": str(ref) if ref else None,
            "sets": {name: str(path) for name, path in project.eval_sets().items()},
            "protocol": project.meta.get("protocol") or "demo"}


def submit_prepare(project: Project, model: str = "embedded:smollm2", root=None,
                   training: dict | None = None) -> list[Path]:
    """Queue the project's two prepare runs (original, then retain reference)."""
    import shutil

    from sga_core.prepare import PREPARE_DEFAULTS
    from sga_core.runs import queue as jobs

    root = runs_root(root)
    out = []
    # the reference first: the original's Forget Quality compares against it
    for run_id, include_forget in ((reference_run_id(project), False),
                                   (original_run_id(project), True)):
        if (root / run_id).exists():
            from sga_core.runs.status import effective_run

            if effective_run(root / run_id).get("state") in ("queued", "running"):
                raise ConfigError(f"{run_id} is already queued or running")
            shutil.rmtree(root / run_id)
        cfg = build_config(project, method="finetune",
                           method_args={"include_forget": include_forget},
                           training={**PREPARE_DEFAULTS, **(training or {})}, launch={},
                           model=model, run_id=run_id,
                           eval_cfg={**default_eval(project, root),
                                     "reference": str(root / reference_run_id(project))},
                           notes="prepare: " + ("original" if include_forget else
                                                "retain reference"))
        out.append(jobs.submit(cfg, root))
    return out
