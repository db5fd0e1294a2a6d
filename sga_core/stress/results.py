"""Reading stress-test results back (``RUN_DIR/stress/<attack>.json``) and saying them in
words; no model is loaded here, so the pages may use it."""

from __future__ import annotations

import json
import os
from pathlib import Path


def stress_dir(run_dir: str | os.PathLike) -> Path:
    from sga_core.runs.folder import STRESS_DIR

    return Path(run_dir) / STRESS_DIR


def read_results(run_dir: str | os.PathLike, folder: str | os.PathLike | None = None
                 ) -> dict[str, dict]:
    """Result key -> result of every readable stress file of a run (or of ``folder``);
    a damaged or foreign file is skipped (it is reported where it is listed)."""
    d = Path(folder) if folder is not None else stress_dir(run_dir)
    out: dict[str, dict] = {}
    try:
        files = sorted(p for p in d.iterdir() if p.suffix == ".json"
                       and not p.name.startswith("."))
    except OSError:
        return out
    for p in files:
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("attack"), str):
            out[data["attack"]] = data
    return out


def recovery_interval(res: dict) -> dict:
    """The recovery's interval dict (``n``, ``mean``, ``lo``, ``hi``; empty if none)."""
    head = ((res.get("summary") or {}).get("probability") or {})
    return head.get("recovery") or {}


def recovery_text(res: dict, digits: int = 2) -> str:
    """"0.85 [0.70, 1.00] (3 seeds)", "0.12", or "undefined: <why>"."""
    iv = recovery_interval(res)
    mean = iv.get("mean")
    if mean is None:
        return f"undefined: {res.get('recovery_reason') or 'no value'}"
    text = f"{mean:.{digits}f}"
    if iv.get("lo") is not None and iv.get("hi") is not None:
        text += f" [{iv['lo']:.{digits}f}, {iv['hi']:.{digits}f}]"
    n = iv.get("n") or 0
    if n > 1:
        text += f" ({n} cases)"
    return text


def attacked_token_tables(run_dir: str | os.PathLike, row: int) -> dict[str, dict]:
    """Per result key that re-scored forget row ``row``: the attacked model's token record
    of that row's answer (``tokens``, ``probs``, ``top``), from the first case that
    evaluated it; a case other than the only one is named in the key ("relearn-10 seed 0")."""
    out: dict[str, dict] = {}
    for key, res in read_results(run_dir).items():
        cases = res.get("cases") or []
        for s in res.get("samples") or []:
            rec = s.get("tokens") if isinstance(s, dict) else None
            if s.get("index") != row or not isinstance(rec, dict) or not rec.get("probs"):
                continue
            ci = s.get("case")
            label = cases[ci].get("label") if isinstance(ci, int) and ci < len(cases) else ""
            out[f"{key} {label}".strip() if len(cases) > 1 else key] = rec
            break
    return out
