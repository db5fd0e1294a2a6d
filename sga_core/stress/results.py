"""Reading stress-test results back (``RUN_DIR/stress/<attack>.json``) and saying them in
words; no model is loaded here, so the pages may use it."""

from __future__ import annotations

import os
from pathlib import Path


def stress_dir(run_dir: str | os.PathLike) -> Path:
    from sga_core.runs.folder import STRESS_DIR

    return Path(run_dir) / STRESS_DIR


def read_results(run_dir: str | os.PathLike, folder: str | os.PathLike | None = None
                 ) -> dict[str, dict]:
    """Result key -> result of every sound stress file of a run (or of ``folder``), each
    checked (:func:`sga_core.runs.validate.stress_result`); a damaged file is left out
    here and reported where the run is listed (``list_runs``' ``damaged``), so one bad
    file never hides the other results, nor breaks a page."""
    from sga_core.runs.folder import STRESS_DIR
    from sga_core.runs.validate import stress_results

    if folder is not None:
        return stress_results(Path(folder).parent, Path(folder).name)[0]
    return stress_results(run_dir, STRESS_DIR)[0]


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
    recovery means, and what the attack says of its cases (its ``case_words``: where a
    case's questions came from)."""
    from sga_core.stress.attacks import attack_of

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
    attack = attack_of(str(res.get("attack") or ""), res.get("family"))
    for c in res.get("cases") or []:
        info = c.get("info") if isinstance(c, dict) else None
        words = attack.case_words(info) if info and attack is not None else None
        if words:
            parts.append(words)
    return "; ".join(parts)


def attacked_token_tables(run_dir: str | os.PathLike, row: int) -> dict[str, dict]:
    """Per result key that re-scored forget row ``row``: the attacked model's token record
    of that row's answer (``tokens``, ``probs``, ``top``). Of an attack over seeds, the
    first seed's cases that evaluated the row: every layer the probe read or every
    template of role-play (those differ in kind), not every seed of the same attack (those
    differ by chance). A case other than the only one is named in the key ("<key> layer 8
    seed 0")."""
    out: dict[str, dict] = {}
    for key, res in read_results(run_dir).items():
        cases = res.get("cases") or []
        seeds: list = []  # the seed of the first case shown
        for s in res.get("samples") or []:
            rec = s.get("tokens")
            if s.get("index") != row or not drawable(rec):
                continue
            ci = s.get("case")
            case = cases[ci] if isinstance(ci, int) and 0 <= ci < len(cases) else {}
            seed = case.get("seed") if isinstance(case, dict) else None
            if seeds and seed != seeds[0]:
                continue
            seeds[:1] = [seed]
            name = f"{key} {case.get('label') or ''}".strip() if len(cases) > 1 else key
            out.setdefault(name, rec)
    return out


def drawable(rec) -> bool:
    """Whether a token record can be drawn: probabilities and top-k alternatives all
    numbers (a model whose scores were NaN has them written null)."""
    if not isinstance(rec, dict) or not rec.get("probs") or "top" not in rec:
        return False
    return None not in rec["probs"] and all(p is not None for alts in rec["top"]
                                            for _, p in alts)
