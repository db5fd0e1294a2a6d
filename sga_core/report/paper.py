"""The paper's Table 1 for one project: every method at its defaults and SGA at the paper's r
values, trained with the same data order and seed (``bench/paper_table.py`` queues them as
one sweep group named ``paper-table-<time>``), with the Original and Retained rows.

Columns (QA): FQ, MU, forget ROUGE-L, retain ROUGE-L, the paper's Table 1; text projects get
their first four Results columns (MUSE's). Rows in the paper's order: its baselines (GA, KL,
GD, LLMU, PO, DPO-RT, NPO-RT, FLAT), then the other methods, then SGA from the largest r to
the smallest. No Streamlit here: the Results page renders what :func:`paper_table` returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sga_core.metrics.catalog import metrics_for, table_columns
from sga_core.report.columns import REFERENCE_ROWS

PAPER_R = (-8.0, -4.0, -2.0, -0.8, -0.4, 0.2, 0.4)
GROUP_PREFIX = "paper-table-"
QA_COLUMNS = ("forget_quality", "model_utility", "forget_rouge", "retain_rouge")
# the paper's Table 1 order, then the methods it compares elsewhere, then the newer ones
ORDER = ("ga", "kl", "gd", "graddiff", "llmu", "idk", "dpo-rt", "npo-rt", "flat", "npo",
         "dpo", "mismatch", "task-vector", "whp", "simnpo", "rmu", "wga", "satimp", "undial",
         "ceu", "pdu", "altpo")
PAPER_NAMES = {"ga": "GA", "kl": "KL", "gd": "GD", "graddiff": "GradDiff", "llmu": "LLMU",
               "idk": "PO", "dpo-rt": "DPO-RT", "npo-rt": "NPO-RT", "npo": "NPO",
               "dpo": "DPO", "mismatch": "Mismatch", "task-vector": "Task Vector",
               "whp": "WHP", "simnpo": "SimNPO", "rmu": "RMU", "flat": "FLAT", "sga": "SGA",
               "wga": "WGA", "satimp": "SatImp", "undial": "UNDIAL", "ceu": "CE-U",
               "pdu": "PDU", "altpo": "AltPO"}
DIVERGENCES = {"kl": "KL", "js": "JS", "tv": "TV", "pearson": "Pearson"}


def paper_columns(kind: str = "qa") -> list:
    """The catalog entries of the paper table's columns."""
    if kind == "qa":
        specs = {s.name: s for s in metrics_for(kind)}
        return [specs[n] for n in QA_COLUMNS if n in specs]
    return table_columns(kind)[:4]


def paper_label(method: str, args: dict) -> str:
    """The row name the paper would print: "FLAT (Pearson)", "SGA (r = -0.8)", ..."""
    name = PAPER_NAMES.get(method, method)
    if method == "sga":
        return f"SGA (r = {float(args.get('r', 0)):g})"
    if method == "flat":
        div = args.get("divergence", "")
        return f"FLAT ({DIVERGENCES.get(div, div)})"
    if method in ("task-vector", "whp") and args.get("alpha") not in (None, 1, 1.0):
        return f"{name} (alpha = {float(args['alpha']):g})"
    return name


def paper_groups(rows: list[dict]) -> list[str]:
    """The paper-table groups among the rows, newest first (names end in their time)."""
    return sorted({r["sweep"] for r in rows if (r.get("sweep") or "").startswith(
        GROUP_PREFIX)}, reverse=True)


def latest_group(rows: list[dict]) -> str | None:
    groups = paper_groups(rows)
    return groups[0] if groups else None


def top_values(rows: list[dict], kind: str = "qa", n: int = 2, skip=(), root=None
               ) -> dict[str, list[float]]:
    """Per column, the paper's highlights: its top ``n`` values among the unlearning runs
    (the paper highlights its top 2), each beating every value below it beyond noise
    (:mod:`sga_core.report.ranking`: fewer, or none, where they do not); the Original and
    Retained rows do not compete; ``skip``: labels of columns that get none; ``root``: the
    runs folder, for the runs' paired intervals."""
    from sga_core.report import ranking

    return ranking.top_values(rows, paper_columns(kind), n, skip, root)


def _method_args(root: Path, run_id: str) -> dict:
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.validate import Damaged

    try:
        return RunFolder(root / run_id).config_dict().get("method_args") or {}
    except Damaged:
        return {}


def _order(row: dict) -> tuple:
    if row["method"] == "sga":
        return (len(ORDER), -(row["r"] or 0.0), row["run_id"])
    rank = ORDER.index(row["method"]) if row["method"] in ORDER else len(ORDER) - 0.5
    return (rank, 0.0, row["run_id"])


def paper_table(rows: list[dict], root, kind: str = "qa", group: str | None = None
                ) -> list[dict]:
    """Rows of :func:`sga_core.report.table.results_table` made into the paper's table: the
    Original and Retained rows, then the runs of ``group`` (default: the newest paper-table
    group) in the paper's order, each named as the paper names it. Empty when no such runs
    are evaluated.

    A label run over several seeds (``bench/paper_table.py --seeds``) is one row: each column
    the mean over its seeds, ``"<column> (interval)"`` the mean with its 95% Student-t
    interval over seeds (:mod:`sga_core.report.seeds`), ``n`` the seeds and ``run_ids`` the
    runs; ``run_id`` is its first seed's."""
    group = group or latest_group(rows)
    if group is None:
        return []
    runs = sorted((r for r in rows if r.get("sweep") == group), key=_order)
    if not runs:
        return []
    labels = [c.label for c in paper_columns(kind)]
    # one run per label and seed: a re-run (bench/paper_table.py --resume) replaces an
    # earlier run of the same method, settings and seed; an evaluated run beats one that is not
    named = [(paper_label(r["method"], _method_args(Path(root), r["run_id"])), r) for r in runs]
    keep: dict[tuple, dict] = {}
    for name, r in named:
        rank = (any(r.get(c) is not None for c in labels), r.get("created_at") or "")
        old = keep.get((name, r.get("seed")))
        if old is None or rank >= (any(old.get(c) is not None for c in labels),
                                   old.get("created_at") or ""):
            keep[(name, r.get("seed"))] = r
    by_label: dict[str, list[dict]] = {}
    for name, r in named:
        if keep[(name, r.get("seed"))] is r:
            by_label.setdefault(name, []).append(r)
    out = [_table_row(r["run"], [r], labels) for r in rows if r["run"] in REFERENCE_ROWS]
    return out + [_table_row(name, members, labels) for name, members in by_label.items()]


def _table_row(name: str, members: list[dict], labels: list[str]) -> dict:
    """One row of the paper table from the runs (one per seed) it stands for."""
    from sga_core.report.seeds import fmt_interval
    from sga_core.report.stats import t_interval

    members = sorted(members, key=lambda m: (m.get("seed") is None, m.get("seed") or 0))
    first = members[0]
    row = {"run": name, "run_id": first["run_id"], "method": first["method"]}
    if len(members) == 1:
        row.update({c: first.get(c) for c in labels})
    else:
        row.update({"n": len(members), "seeds": [m.get("seed") for m in members],
                    "run_ids": [m["run_id"] for m in members]})
        for c in labels:
            iv = t_interval([m.get(c) for m in members])
            row[c], row[f"{c} (interval)"] = iv.mean, fmt_interval(iv)
    row.update({f"{c} (why)": first[f"{c} (why)"] for c in labels if f"{c} (why)" in first})
    return row


def add_stress_columns(rows: list[dict], root) -> list[str]:
    """Add each row's stress-test recoveries (``RUN_DIR/stress/``) to the paper table's
    rows as ``"<attack> recovery"`` (the mean, None when undefined) and ``"<attack> recovery
    (text)"`` (with its interval, or why it is undefined); returns the new columns in the
    attacks' order. A row whose run was not stress-tested has None and "—" there."""
    from sga_core.report.stress import stress_table

    table, keys = stress_table(rows, root)
    by_run = {t["run"]: t for t in table}
    columns = [f"{k} recovery" for k in keys]
    for r in rows:
        got = by_run.get(r["run"], {})
        for k, col in zip(keys, columns):
            r[col] = got.get(k)
            r[f"{col} (text)"] = got.get(f"{k} (text)", "—")
    return columns


def format_table(rows: list[dict], kind: str = "qa", extra: Sequence[str] = ()) -> str:
    """The table as Markdown (the bench prints it): a value, or its mean with its interval
    over seeds where it has one; ``extra``: columns shown by their ``"<column> (text)"`` (the
    stress recoveries of :func:`add_stress_columns`)."""
    labels = [c.label for c in paper_columns(kind)]
    heads = labels + list(extra)
    lines = ["| run | " + " | ".join(heads) + " |", "|---|" + "---|" * len(heads)]
    for r in rows:
        cells = [r.get(f"{c} (interval)") or ("—" if r.get(c) is None else f"{r[c]:.4g}")
                 for c in labels]
        cells += [str(r.get(f"{c} (text)", "—")) for c in extra]
        lines.append(f"| {r['run']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
