"""Experiment trackers through accelerate (``training.report_to``, docs/long-runs.md):
TensorBoard (event files in the run folder's ``tensorboard/``), Weights & Biases and MLflow.

Each step's losses (forget, normal, retain NLL, the loss, gradient norm, learning rate, r) go
to ``train/<name>``, evaluation during training to ``eval/<metric>`` and the final
evaluation's summary to ``final/<metric>``, at the step they belong to; the run's config is
the tracker's hyperparameters, its id the tracker's run name, its sweep and group the tags.
The run folder stays the record (metrics.jsonl): trackers are a copy for the tools labs read.

wandb and mlflow are optional: asking for one that is not installed is a ConfigError when
the config is checked, before any run folder or training exists.
"""

from __future__ import annotations

import importlib.util
import json
import math

TRACKERS = ("tensorboard", "wandb", "mlflow")
#: the module each tracker needs, and how to get it
MODULES = {"tensorboard": ("tensorboard", "pip install tensorboard (in requirements.txt)"),
           "wandb": ("wandb", "pip install wandb"),
           "mlflow": ("mlflow", "pip install mlflow")}
PROJECT = "sga-workbench"
STEP_KEYS = ("loss", "forget_nll", "normal_nll", "retain_nll", "grad_norm", "lr", "r",
             "r_star")


def names_problem(report_to: list[str]) -> str | None:
    """What is wrong with a ``report_to`` list's names (None when nothing)."""
    for name in report_to:
        if name != "none" and name not in TRACKERS:
            return (f"report_to: {name!r} is not a tracker (none, {', '.join(TRACKERS)}, or "
                    "several)")
    return None


def chosen(report_to: list[str]) -> list[str]:
    """The trackers asked for, each once, in order ("none" dropped)."""
    return list(dict.fromkeys(n for n in report_to if n != "none"))


def missing(report_to: list[str]) -> str | None:
    """One line naming the first tracker asked for whose package is not installed."""
    for name in chosen(report_to):
        module, how = MODULES[name]
        if importlib.util.find_spec(module) is None:
            return (f"training.report_to: {name} is asked for but not installed here "
                    f"({how}), or leave it out of report_to")
    return None


def flat_config(cfg_dict: dict, prefix: str = "") -> dict:
    """The config as tracker hyperparameters: nested keys joined with '.', values bool,
    int, float or str (lists, mappings and None as JSON text)."""
    out = {}
    for key, value in cfg_dict.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flat_config(value, name + "."))
        elif isinstance(value, (bool, int, str)) or (isinstance(value, float)
                                                     and math.isfinite(value)):
            out[name] = value
        else:
            out[name] = json.dumps(value, default=str)
    return out


def tags(cfg) -> list[str]:
    return [t for t in (f"sweep:{cfg.sweep}" if cfg.sweep else None,
                        f"group:{cfg.group}" if cfg.group else None,
                        f"method:{cfg.method}") if t]


def log_with(cfg, tensorboard_dir, resume_step: int | None):
    """The ``log_with`` argument of the run's Accelerator (None when no tracker): TensorBoard
    as a tracker object writing straight into ``tensorboard_dir`` (the run folder's
    ``tensorboard/``); a resumed run purges the events after its checkpoint's step
    (``purge_step``), as metrics.jsonl is cut."""
    names = chosen(cfg.training.report_to)
    if not names:
        return None
    out: list = []
    for name in names:
        if name == "tensorboard":
            from accelerate.tracking import TensorBoardTracker

            kwargs = {"purge_step": resume_step + 1} if resume_step is not None else {}
            out.append(TensorBoardTracker("", str(tensorboard_dir), **kwargs))
        else:
            out.append(name)
    return out


def init_kwargs(cfg) -> dict:
    """Per-tracker start settings: the run's name, group and tags; wandb's run id is the
    run's, so a resumed run continues its wandb run."""
    group = cfg.group or cfg.sweep
    wandb = {"name": cfg.run_id, "tags": tags(cfg), "id": cfg.run_id, "resume": "allow"}
    if group:
        wandb["group"] = group
    return {"wandb": wandb,
            "mlflow": {"run_name": cfg.run_id,
                       "tags": {t.split(":", 1)[0]: t.split(":", 1)[1] for t in tags(cfg)}}}


def start(acc, cfg, tensorboard_dir, resume_step: int | None = None) -> None:
    """Start the run's trackers (main process; nothing when none is asked for), given to
    the Accelerator only now (:func:`log_with`): a resume starts them once its checkpoint
    is loaded, so a resume that fails purges no TensorBoard events."""
    if not chosen(cfg.training.report_to):
        return
    from accelerate.tracking import filter_trackers

    acc.log_with = filter_trackers(log_with(cfg, tensorboard_dir, resume_step),
                                   acc.logging_dir)
    acc.init_trackers(PROJECT, config=flat_config(cfg.to_dict()),
                      init_kwargs=init_kwargs(cfg))


def scalars(values: dict, prefix: str) -> dict:
    """The finite numbers of ``values`` under ``prefix/``."""
    return {f"{prefix}/{k}": float(v) for k, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


def log_step(acc, cfg, rec: dict, method_keys: tuple[str, ...] = ()) -> None:
    """One logged step: :data:`STEP_KEYS`, and ``method_keys`` (what the method logs of its
    own, e.g. PDU's ``retain_preference``)."""
    if chosen(cfg.training.report_to):
        acc.log(scalars({k: rec.get(k) for k in STEP_KEYS + tuple(method_keys)}, "train"),
                step=rec["step"])


def log_eval(acc, cfg, step: int, values: dict) -> None:
    if chosen(cfg.training.report_to):
        acc.log(scalars(values, "eval"), step=step)


def log_summary(acc, cfg, step: int, summary: dict) -> None:
    """The final evaluation's metrics (eval/summary.json's ``metrics``: name -> {value})."""
    if not chosen(cfg.training.report_to):
        return
    metrics = summary.get("metrics") if isinstance(summary, dict) else None
    if isinstance(metrics, dict):
        acc.log(scalars({k: (v or {}).get("value") if isinstance(v, dict) else None
                         for k, v in metrics.items()}, "final"), step=step)
