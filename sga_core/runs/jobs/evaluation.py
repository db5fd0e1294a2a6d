"""The evaluation of a trained run: ``python -m sga_core eval RUN_DIR`` into ``eval/``.

Requested by the ``EVAL_REQUESTED`` marker (extra evaluation sets, another protocol), or
started by the runner when a run whose config asks for it completes; its status is
``eval/status.json`` and its log ``eval.log``."""

from __future__ import annotations

from pathlib import Path

from sga_core.runs.folder import RunFolder
from sga_core.runs.jobs.base import JobKind


def argv(run_dir: Path, request: dict) -> list[str]:
    """The evaluation command of a run folder: ``request``'s ``sets`` (name -> file) are
    evaluated besides the run's own, under its ``protocol`` when it names one."""
    sets = request.get("sets") if isinstance(request.get("sets"), dict) else {}
    extra = [a for name, path in sets.items() for a in ("--set", f"{name}={path}")]
    proto = request.get("protocol")
    extra += ["--protocol", proto] if isinstance(proto, str) and proto else []
    return ["python", "-m", "sga_core", "eval", str(Path(run_dir).resolve()), *extra]


def refusal(run_dir: Path) -> str | None:
    """Why the evaluation of this run cannot start (None: it can): its config no longer
    loads, or an evaluation set its config names is gone (runs made before evaluation sets
    were snapshotted name the project's file, which a removed set takes away)."""
    try:
        cfg = RunFolder(run_dir).config()
    except Exception as exc:  # noqa: BLE001 - a damaged or changed config, said as it is
        return f"its config.yaml does not load: {exc}"
    gone = {k: str(cfg.resolve(v)) for k, v in cfg.eval.sets.items()
            if not Path(cfg.resolve(v)).is_file()}
    if gone:
        names = ", ".join(f"{k} ({v})" for k, v in gone.items())
        return (f"its evaluation set {names} no longer exists (removed after the run was "
                "made); add it again under the same name, or delete the run")
    return None


KIND = JobKind(name="evaluation", key="eval", status="eval_status_path",
               request="eval_request_path", log="eval_log_path", read="read_eval_status",
               shown="eval_status", argv=argv, ended="writing its summary",
               refusal=refusal)
