"""The Results download: one row per seed and one per configuration (its mean, sd, 95%
interval bounds and n per metric), as rows (JSON) or CSV text."""

from __future__ import annotations

from sga_core.report.columns import column_labels, optional_columns
from sga_core.report.seeds import groups


def export_rows(rows: list[dict], kind: str = "qa") -> list[dict]:
    """The CSV/JSON download: one row per seed (``level: seed``, the run's values) and one
    per configuration (``level: group``: per metric its mean, sd, interval bounds and n, and
    how many of its seeds collapsed). Every column is pooled, those Results shows on
    request too (each attack's AUC and PrivLeak, ...)."""
    shown = optional_columns(rows, kind)
    cols = column_labels(rows, kind, shown)
    out = [{"level": "seed", "configuration": None, **r} for r in rows]
    for g in groups(rows, kind, shown):
        for m in g["runs"]:
            next(o for o in out if o.get("run_id") == m["run_id"])["configuration"] = g["label"]
        row = {"level": "group", "configuration": g["label"], "group": g["group"],
               "method": g["method"], "r": g["r"], "K": g["K"], "sweep": g["sweep"],
               "n": g["n"], "seeds": ", ".join(str(s) for s in g["seeds"] if s is not None),
               "collapsed seeds": g["collapsed"] if g["collapse_known"] else None}
        for c in cols:
            iv = g[c]
            row.update({c: iv.mean, f"{c} sd": iv.sd, f"{c} 95% low": iv.lo,
                        f"{c} 95% high": iv.hi, f"{c} n": iv.n})
        out.append(row)
    return out


INTEGER_FIELDS = ("K", "n", "seed")  # counts and ids: never written as 4.0


def _cell(field: str, value) -> str:
    """One CSV cell: empty for a missing value, integers (and integer fields such as K, n,
    seed and each metric's 'n', even when a float arrives) without a decimal point, other
    numbers in their shortest exact form."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, float) and value.is_integer() and (
            field in INTEGER_FIELDS or field.endswith(" n")):
        return str(int(value))
    return str(value)


def export_csv(rows: list[dict], kind: str = "qa") -> str:
    """:func:`export_rows` as CSV text, each column once in first-seen order."""
    import csv
    import io

    out = export_rows(rows, kind)
    fields = list(dict.fromkeys(k for o in out for k in o))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(fields)
    writer.writerows([[_cell(f, o.get(f)) for f in fields] for o in out])
    return buf.getvalue()
