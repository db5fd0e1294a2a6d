"""A study's curve (MUSE's sustainability and scalability figures): a metric of each
request's run against the request number, with the Original and the Retained model as
references (their evaluations: the prepared runs). Data only; ui/study.py draws it."""

from __future__ import annotations

from pathlib import Path

from sga_core.runs.folder import RunFolder, runs_root
from sga_core.runs.validate import Damaged

#: what the curve shows first: MUSE's figures (KnowMem and VerbMem on the forget set, the
#: utility's KnowMem on the retain set)
DEFAULT_METRICS = ("forget_knowmem", "forget_verbmem", "retain_knowmem")
X_LABELS = {"sustain": "request (unlearned one after another)",
            "scale": "forget set (request k: folds 1..k)"}


def _values(run_dir: Path) -> tuple[dict[str, float], str | None]:
    """A run's numeric metric values from its evaluation, and why there are none (not
    evaluated yet, damaged) or None."""
    try:
        summary = RunFolder(run_dir).summary()
    except Damaged as exc:
        return {}, f"damaged: {exc}"
    if summary is None:
        return {}, "not evaluated yet"
    out = {}
    for name, entry in (summary.get("metrics") or {}).items():
        value = entry.get("value") if isinstance(entry, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
            out[name] = float(value)
    return out, None


def _state(run_dir: Path) -> str:
    from sga_core.runs.status import effective_run

    if not run_dir.is_dir():
        return "missing"
    try:
        return str(effective_run(run_dir).get("state") or "unknown")
    except Exception:  # noqa: BLE001 - a damaged status shows as such, the rest still shows
        return "damaged"


def study_curve(study, root=None, metrics: list[str] | tuple[str, ...] | None = None) -> dict:
    """The study's points and references:

    ``points``: one per request, ``{"request": k, "part", "run", "state", "values":
    {metric: value}, "why"}`` (``why``: no values yet, and why); ``references``:
    ``{"Original": {metric: value}, "Retained": {...}}`` (only those evaluated);
    ``metrics``: those asked for (default :data:`DEFAULT_METRICS`), ``available``: every
    metric some point or reference has; ``x_label``: what the request number means."""
    root = runs_root(root)
    points = []
    for k, (part, run_id) in enumerate(zip(study.parts, study.runs), 1):
        values, why = _values(root / run_id)
        points.append({"request": k, "part": part, "run": run_id,
                       "state": _state(root / run_id), "values": values, "why": why})
    references = {}
    for label, run_id in (("Original", study.original_run), ("Retained", study.reference_run)):
        if run_id:
            values, _ = _values(root / run_id)
            if values:
                references[label] = values
    available = sorted({m for p in points for m in p["values"]} |
                       {m for v in references.values() for m in v})
    chosen = list(metrics) if metrics else [m for m in DEFAULT_METRICS if m in available]
    return {"study": study.name, "mode": study.mode, "method": study.method,
            "x_label": X_LABELS.get(study.mode, "request"), "points": points,
            "references": references, "metrics": chosen, "available": available}


def curve_series(curve: dict) -> list[dict]:
    """One series per chosen metric: ``{"metric", "x": [request...], "y": [value...],
    "Original": value | None, "Retained": value | None}``, the requests without a value
    left out (a run not evaluated yet)."""
    out = []
    for metric in curve["metrics"]:
        pts = [(p["request"], p["values"][metric]) for p in curve["points"]
               if metric in p["values"]]
        out.append({"metric": metric, "x": [x for x, _ in pts], "y": [y for _, y in pts],
                    **{label: curve["references"].get(label, {}).get(metric)
                       for label in ("Original", "Retained")}})
    return out
