"""A run that trains from another run's model: an unlearning run launched on the prepared
Original while Prepare is still queued. The local queue holds it until that run has its
model, and fails it, saying why, when that run ended without one (cancelled, failed), never
starting a trainer that would die on a missing model folder."""

from __future__ import annotations

from pathlib import Path

from sga_core.fileio import load_yaml
from sga_core.runs import status as run_status
from sga_core.runs.folder import RunFolder

WAIT, FAIL, GO = "wait", "fail", "go"
ENDED = {"cancelled": "was cancelled", "failed": "failed", "diverged": "diverged",
         "completed": "completed without saving its model"}


def source_run(run_dir: str | Path) -> Path | None:
    """The run folder beside ``run_dir`` whose model this run's config names (``<runs>/<id>/
    model``), else None (a model of the hub, a folder elsewhere, an unreadable config)."""
    run_dir = Path(run_dir)
    try:
        path = RunFolder(run_dir).config_path
        cfg = load_yaml(path.read_bytes(), path.name, fast=True)
    except Exception:  # a damaged config is the trainer's to report
        return None
    model = cfg.get("model") if isinstance(cfg, dict) else None
    if not isinstance(model, str) or not model:
        return None
    src = Path(model).parent
    try:
        same_root = src.parent.resolve() == run_dir.parent.resolve()
    except OSError:
        return None
    if not same_root or src.resolve() == run_dir.resolve() or \
            Path(model).name != RunFolder(src).model_dir.name or \
            not RunFolder(src).status_path.exists():
        return None
    return src


def gate(run_dir: str | Path) -> tuple[str, str | None]:
    """Whether a queued run may start: (``WAIT``, why) while the run whose model it trains
    from is queued or running; (``FAIL``, why) when that run ended without its model;
    (``GO``, None) otherwise."""
    src = source_run(run_dir)
    if src is None:
        return GO, None
    try:  # as shown: a run whose processes were killed (kill -9, a restart) is failed,
        # not the "running" its status file still says
        state = run_status.effective_run(src).get("state")
    except Exception:  # a damaged status: the trainer says what it finds
        return GO, None
    if state in ("queued", "running"):
        return WAIT, (f"waiting for run {src.name} ({state}): it trains from that run's "
                      "model")
    if state == "completed" and RunFolder(src).model_dir.is_dir():
        return GO, None
    if state in ENDED:
        return FAIL, (f"it trains from run {src.name}'s model, and that run {ENDED[state]} "
                      "without one: prepare (or train) it again, then launch this run again")
    return GO, None
