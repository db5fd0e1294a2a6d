"""What the rows of the Results table are made of: the two reference rows (the Original and
Retained models, which never compete) and the value columns a set of rows has (every
protocol's columns they were evaluated under, then their extra lm-eval tasks)."""

from __future__ import annotations

from sga_core.metrics.catalog import table_columns

#: the rows of the models unlearning is measured against: they are never "best", never
#: collapsed, never a point of a sweep
REFERENCE_ROWS = ("Original", "Retained")
#: the prefix of an extra lm-eval task's metric (``lm_<task>``: one column each)
LM_PREFIX = "lm_"


def row_columns(rows: list[dict], kind: str = "qa") -> list:
    """The metric columns of these Results rows: those of every protocol they were
    evaluated under (a row without one counts as the demo's)."""
    return table_columns(kind, {r.get("protocol") or "demo" for r in rows})


def extra_columns(rows: list[dict]) -> list[str]:
    """The labels of the extra lm-eval task columns some row has, in first-seen order."""
    out: list[str] = []
    for r in rows:
        out += [k for k in r.get("lm_columns") or () if k not in out]
    return out


def column_labels(rows: list[dict], kind: str = "qa") -> list[str]:
    """Every value column of these rows: :func:`row_columns`, then :func:`extra_columns`."""
    return [c.label for c in row_columns(rows, kind)] + extra_columns(rows)
