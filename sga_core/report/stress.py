"""The "Does it hold?" table: one row per run, one column per stress attack, each cell the
recovery of the forget probability (docs/stress-tests.md#recovery); the collapse flag of
the Results table rides along, since a collapsed run's "held" forgetting means nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def stress_table(rows: Sequence[dict], root=None) -> tuple[list[dict], list[str]]:
    """``(table rows, attack columns)`` for Results rows (a run folder: ``path``, else
    ``root / run_id``; optionally ``collapsed``). Each table row: ``run``, ``collapsed``,
    and per attack key the recovery mean (None when undefined) plus ``<key> (text)`` in
    words and ``<key> (detail)``: the values it is made of. Runs with no stress results
    are left out; the columns are the attack keys any run has, in the attacks' order (a
    key no registered attack writes last)."""
    from sga_core.stress.attacks import attack_of, attacks
    from sga_core.stress.results import (
        read_results,
        recovery_detail,
        recovery_interval,
        recovery_text,
    )

    rank = {c: i for i, c in enumerate(attacks())}
    out, keys = [], set()
    for r in rows:
        path = r.get("path") or (Path(root) / r["run_id"] if root and r.get("run_id")
                                 else None)
        if not path:
            continue
        res = read_results(path)
        if not res:
            continue
        row = {"run": r.get("run") or r.get("run_id"), "collapsed": r.get("collapsed")}
        for key, data in res.items():
            keys.add(key)
            row[key] = recovery_interval(data).get("mean")
            row[f"{key} (text)"] = recovery_text(data)
            row[f"{key} (detail)"] = recovery_detail(data)
        out.append(row)

    def place(key: str) -> tuple:
        attack = attack_of(key)
        if attack is None:
            return (len(rank), 0, key)
        return (rank[attack], attack.key_order(key), key)

    return out, sorted(keys, key=place)


def recovery_band(value: float | None) -> str:
    """"held" (< 0.25), "partly back" (< 0.75), "back" (>= 0.75) or "undefined"."""
    if value is None:
        return "undefined"
    if value < 0.25:
        return "held"
    return "partly back" if value < 0.75 else "back"
