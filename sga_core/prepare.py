"""``prepare``: the TOFU protocol's two starting models, each trained as a run folder.

- ``<name>-original``: the base model fine-tuned on forget + retain rows (the model to unlearn);
- ``<name>-retain-ref``: the base model fine-tuned on retain rows only (the reference for
  Forget Quality: what a model that never saw the forget set looks like).
"""

from __future__ import annotations

import shutil

from sga_core.config import TrainConfig
from sga_core.launch import run_foreground
from sga_core.runs import create_run, runs_root

# Chosen on the demo with SmolLM2 (see README): answer NLL < 0.2 on forget and retain rows.
PREPARE_DEFAULTS = {"lr": 1e-4, "epochs": 4, "batch_size": 8, "probe_count": 0,
                    "log_every": 1, "probe_every": 0}


def prepare(forget: str, retain: str, model: str = "embedded:smollm2", name: str | None = None,
            runs_dir=None, training: dict | None = None, launch: dict | None = None,
            task: str = "qa", which: str = "both", overwrite: bool = True,
            echo=print) -> dict:
    """Train the original and/or the retain reference; returns {run_id: {state, path}}."""
    name = name or "prepared"
    root = runs_root(runs_dir)
    plan = []
    if which in ("both", "original"):
        plan.append((f"{name}-original", True))
    if which in ("both", "retain-ref"):
        plan.append((f"{name}-retain-ref", False))
    results = {}
    for run_id, include_forget in plan:
        if overwrite and (root / run_id).exists():
            shutil.rmtree(root / run_id)
        cfg = TrainConfig.from_dict({
            "run_id": run_id, "model": model, "method": "finetune",
            "method_args": {"include_forget": include_forget},
            "data": {"task": task, "forget": forget, "retain": retain},
            "training": {**PREPARE_DEFAULTS, **(training or {})},
            "launch": launch or {},
            "notes": "prepare: " + ("original (forget + retain)" if include_forget
                                    else "retain reference (retain only)"),
        })
        run_dir = create_run(cfg, root)
        echo(f"== {run_id}: fine-tuning {model} ({cfg.notes})")
        status = run_foreground(run_dir, echo=echo)
        results[run_id] = {"state": status.get("state"), "path": str(run_dir),
                           "model": str(run_dir / "model"), "error": status.get("error")}
        if status.get("state") != "completed":
            break
    return results
