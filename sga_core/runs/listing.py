"""Listing the runs of a runs folder: each run folder with its status and key settings, as
the Runs and Results pages, the CLI's ``runs list`` and the queue read them (newest first),
and the state of each run's evaluation and stress-test jobs, a waiting request shown as
"queued". Every file is read through :class:`~sga_core.runs.folder.RunFolder`; a run with a
damaged file is listed too, its damage named."""

from __future__ import annotations

import os
from pathlib import Path

from sga_core.runs import validate
from sga_core.runs.damage import run_damage
from sga_core.runs.folder import RunFolder, manifest, runs_root


def _config_of(path: Path) -> dict:
    """A run's config.yaml as a mapping ({} when unreadable or damaged), parsed once per
    file version: the Runs and Results pages list every run each second."""
    try:
        st = path.stat()
    except OSError:
        return {}
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _CONFIGS:
        try:
            data = RunFolder(path.parent).config_dict()
        except validate.Damaged:  # a broken config still lists, marked as damaged
            data = {}
        if len(_CONFIGS) > 4096:
            _CONFIGS.clear()
        _CONFIGS[key] = data
    return _CONFIGS[key]


_CONFIGS: dict[tuple, dict] = {}


def list_runs(root: str | os.PathLike | None = None) -> list[dict]:
    """Every run folder with its status and key settings, newest first. A run with a
    damaged file is listed too, with ``damaged`` saying which file and why (None for a
    sound run) and the settings of its damaged files left out."""
    root = runs_root(root)
    out = []
    if not root.exists():
        return out
    for d in root.iterdir():
        run = RunFolder(d)
        if not d.is_dir() or d.name.startswith(".") or not run.exists():
            continue
        cfg = _config_of(run.config_path)
        st = run.status()
        args = cfg.get("method_args") if isinstance(cfg.get("method_args"), dict) else {}
        forget = manifest(d).get("forget") or {}
        training = cfg.get("training") if isinstance(cfg.get("training"), dict) else {}
        swept = _sweep_param(cfg.get("method"))
        out.append({"run_id": d.name, "path": str(d), "state": st.get("state", "unknown"),
                    "forget_hash": forget.get("rows_hash"),
                    "method": cfg.get("method"), "r": args.get("r"), "k": args.get("k"),
                    "sweep_param": swept, "sweep_value": _number(args.get(swept)),
                    "sweep": cfg.get("sweep"), "group": cfg.get("group"),
                    "seed": training.get("seed"), "mode": st.get("mode"),
                    "backend": st.get("backend"),
                    "eval_enabled": _eval_enabled(cfg),
                    "created_at": st.get("created_at"), "queued_ns": st.get("queued_ns"),
                    "started_at": st.get("started_at"), "ended_at": st.get("ended_at"),
                    "step": st.get("step"), "total_steps": st.get("total_steps"),
                    "eval_state": eval_state(d), "stress_state": stress_state(d),
                    "damaged": run_damage(d, st),
                    "slurm_job_id": st.get("slurm_job_id"),
                    "slurm_reason": st.get("slurm_reason"),
                    "published": _published_role(run)})
    out.sort(key=lambda r: r.get("created_at") or "", reverse=True)
    return out


def _published_role(run: RunFolder) -> str | None:
    """"original" / "retained" for the evaluation folder of a project's published model
    (nothing trained there), else None."""
    if not run.published_path.exists():
        return None
    return (run.published_model() or {}).get("role")


def _eval_enabled(cfg: dict) -> bool:
    """Whether a config (as :func:`_config_of` read it) asks for an evaluation when the run
    completes (``eval.enabled``, true unless it says otherwise)."""
    ev = cfg.get("eval") if isinstance(cfg.get("eval"), dict) else {}
    return ev.get("enabled", True) is not False


def _sweep_param(method) -> str | None:
    """The setting a sweep of ``method`` varies (SGA: r; Task Vector, WHP: alpha)."""
    from sga_core.methods import REGISTRY

    cls = REGISTRY.get(method) if isinstance(method, str) else None
    return cls.sweep_param if cls is not None else None


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def eval_state(run_dir: Path) -> str | None:
    """The evaluation's state; "queued" while a request for it waits (even over the state
    of an earlier evaluation)."""
    run = RunFolder(run_dir)
    state = run.eval_status().get("state")
    return "queued" if state != "running" and run.eval_requested() else state


def stress_state(run_dir: str | os.PathLike) -> str | None:
    """The state of a run's stress test job; "queued" while a request for one waits (even
    over the state of an earlier one), None when none was ever asked for."""
    run = RunFolder(run_dir)
    state = run.stress_status().get("state")
    return "queued" if state != "running" and run.stress_requested() else state


def eval_request_protocol(run_dir: str | os.PathLike) -> str | None:
    """The evaluation protocol an evaluation request asks for (None: the run's own)."""
    import json

    try:
        data = json.loads(RunFolder(run_dir).eval_request_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    proto = data.get("protocol") if isinstance(data, dict) else None
    return proto if isinstance(proto, str) and proto else None


def eval_request_sets(run_dir: str | os.PathLike) -> dict[str, str]:
    """:meth:`RunFolder.eval_request_sets` of the run at ``run_dir``."""
    return RunFolder(run_dir).eval_request_sets()
