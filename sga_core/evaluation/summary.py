"""Reading an evaluation's summary back, and printing it."""

from __future__ import annotations

import os
from pathlib import Path

from sga_core.evaluation.common import EVAL_DIR, SUMMARY_FILE


def read_summary(path: str | os.PathLike) -> dict | None:
    """A run folder's (or an eval folder's) summary.json, checked, or None; a damaged one
    raises :class:`sga_core.runs.validate.Damaged` naming it."""
    from sga_core.runs.validate import SUMMARY_FIELDS, read_json_file

    p = Path(path)
    for cand in (p / EVAL_DIR / SUMMARY_FILE, p / SUMMARY_FILE, p):
        if cand.is_file():
            return read_json_file(cand.parent, cand.name, SUMMARY_FIELDS, ("metrics",))
    return None


def format_summary(summary: dict) -> str:
    """The summary's metrics as an aligned text table (the CLI prints it)."""
    lines = [f"{'metric':28s} {'value':>12s}  note"]
    for name, m in (summary.get("metrics") or {}).items():
        v = m.get("value")
        text = "-" if v is None else f"{v:.4g}" if abs(v) < 1e4 else f"{v:.4e}"
        lines.append(f"{name:28s} {text:>12s}  {m.get('reason') or ''}".rstrip())
        if name == "model_utility":
            lines += _mu_lines(summary)
    ref = summary.get("reference") or {}
    if ref.get("path"):
        lines.append(f"reference: {ref['path']} ({ref.get('source') or ref.get('reason')})")
    lines.append(f"elapsed: {summary.get('elapsed_s')} s")
    return "\n".join(lines)


def _mu_lines(summary: dict) -> list[str]:
    """MU's 9 components, indented under it, the lowest marked."""
    from sga_core.metrics.utility_parts import component_label, components, lowest

    parts = components(summary)
    low = lowest(parts)
    return [f"  {component_label(k):26s} {'-' if v is None else f'{v:.4g}':>12s}"
            + ("  <- lowest" if k == low else "") for k, v in parts.items()]
