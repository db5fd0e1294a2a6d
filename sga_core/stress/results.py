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


#: an Original-unlearned gap below this makes a recovery noisy (it is still shown)
SMALL_GAP = 0.05


def recovery_detail(res: dict, digits: int = 3) -> str:
    """What the recovery is made of, for a reader to judge it: the forget probability of
    the unlearned, attacked and Original models and the gap between the two ends ("small"
    below :data:`SMALL_GAP`: the ratio of two small numbers is noisy), what a negative
    recovery means, and where a case's questions came from (generated paraphrases)."""
    head = (res.get("summary") or {}).get("probability") or {}
    u, o = head.get("unlearned"), head.get("original")
    a = (head.get("attacked") or {}).get("mean")
    parts = []
    if None not in (u, a, o):
        gap = o - u
        parts.append(f"forget probability: unlearned {u:.{digits}f} -> attacked {a:.{digits}f}"
                     f", Original {o:.{digits}f} (gap {gap:.{digits}f}"
                     + (", small: the recovery is noisy" if abs(gap) < SMALL_GAP else "")
                     + ")")
    mean = recovery_interval(res).get("mean")
    if isinstance(mean, (int, float)) and mean < 0:
        parts.append("below 0: the attack moved the model further from the Original")
    for c in res.get("cases") or []:
        info = c.get("info") if isinstance(c, dict) else None
        if not info:
            continue
        said = [f"{info.get('from_data', 0)} paraphrases from the data"]
        if info.get("paraphraser"):
            said.append(f"{info.get('generated', 0)} written by {info['paraphraser']}")
        if info.get("left_out"):
            said.append(f"{len(info['left_out'])} left out (e.g. "
                        f"{next(iter(info['left_out'].values()))})")
        parts.append(", ".join(said))
    return "; ".join(parts)


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
