"""Read-side helpers for watching a run (no Streamlit): progress, ETA, probe colouring."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from pathlib import Path

from sga_core.runs.folder import metrics, probes, tail
from sga_core.runs.status import effective_run


def _parse(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def progress(run_dir: str | Path) -> dict:
    """State, step/total, fraction, elapsed and ETA (seconds) of a run."""
    st = effective_run(run_dir)
    step, total = int(st.get("step") or 0), int(st.get("total_steps") or 0)
    start = _parse(st.get("started_at"))
    end = _parse(st.get("ended_at")) if st.get("state") not in ("queued", "running") else None
    now = end or datetime.now(UTC)
    elapsed = (now - start).total_seconds() if start else None
    eta = None
    if st.get("state") == "running" and elapsed and step and total:
        eta = elapsed / step * (total - step)
    return {"state": st.get("state"), "step": step, "total": total,
            "fraction": min(1.0, step / total) if total else 0.0, "elapsed_s": elapsed,
            "eta_s": eta, "error": st.get("error"), "status": st,
            "text": f"step {step}/{total}" if total else st.get("state", "")}


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def prob_color(p: float) -> str:
    """Red (0) through yellow to green (1)."""
    p = max(0.0, min(1.0, p))
    r = int(255 * min(1.0, 2 * (1 - p)))
    g = int(200 * min(1.0, 2 * p))
    return f"rgb({r},{g},60)"


def tokens_html(tokens: list[str], probs: list[float], highlight: str | None = None) -> str:
    """Answer tokens as spans coloured by probability (title = the probability)."""
    spans = []
    for tok, p in zip(tokens, probs):
        border = "border:2px solid #1f4fff;" if highlight and tok.strip() == highlight else ""
        spans.append(f'<span title="p={p:.3f}" style="background:{prob_color(p)};'
                     f'color:#111;padding:1px 2px;margin:1px;border-radius:3px;{border}">'
                     f'{html.escape(tok).replace(" ", "&nbsp;")}</span>')
    return "<div style='line-height:2'>" + "".join(spans) + "</div>"


def latest_probes(run_dir: str | Path) -> dict[int, list[dict]]:
    """Probe records grouped by forget row, in step order."""
    out: dict[int, list[dict]] = {}
    for rec in probes(run_dir):
        out.setdefault(rec.get("forget_index"), []).append(rec)
    return out


__all__ = ["fmt_seconds", "latest_probes", "metrics", "progress", "prob_color", "tail",
           "tokens_html"]
