"""What the rows of the Results table are made of: the two reference rows (the Original and
Retained models, which never compete) and the value columns a set of rows has (every
protocol's columns they were evaluated under, then their extra lm-eval tasks)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sga_core.metrics.catalog import spec_of, table_columns

#: the rows of the models unlearning is measured against: they are never "best", never
#: collapsed, never a point of a sweep
REFERENCE_ROWS = ("Original", "Retained")
#: the prefix of an extra lm-eval task's metric (``lm_<task>``: one column each)
LM_PREFIX = "lm_"


#: the metrics Results shows on request, beside its columns: each membership-inference
#: attack's AUC (``mia_auc``, ``mia_<attack>_auc``) and PrivLeak (``privleak``,
#: ``privleak_<attack>``), each QA set's ``<set>_truth_ratio_prob_mean``, and each
#: multiple-choice set's accuracy (``<set>_accuracy``: MMLU as a TOFU project's utility set)
#: where the protocol the row was evaluated under has no column for it
OPTIONAL_RE = re.compile(r"mia_(?:\w+_)?auc|privleak(?:_\w+)?|(\w+)_truth_ratio_prob_mean|"
                         r"(\w+)_accuracy")


@dataclass(frozen=True)
class Column:
    """A column Results shows on request: a catalog metric (a family's member named)."""

    name: str
    label: str
    help: str
    direction: str


def optional_column(name: str, kind: str, protocols=None) -> Column | None:
    """The column of a summary key that Results shows on request (:data:`OPTIONAL_RE`), else
    None: also None when it is a column of the table already, under one of ``protocols``
    (the protocols of the rows shown; None: any)."""
    m = OPTIONAL_RE.fullmatch(name)
    try:
        spec = spec_of(name, kind) if m else None
    except KeyError:  # a metric the catalog no longer has
        return None
    if spec is None:
        return None
    if spec.column is not None and (protocols is None or
                                    any(spec.under(p) for p in protocols)):
        return None  # a column of the table (under these protocols)
    own = next((g for g in m.groups() if g), None)
    label = spec.label.format(set=own) if spec.is_family else spec.label
    return Column(name, label, spec.help, spec.direction)


def optional_columns(rows: list[dict], kind: str = "qa") -> list[Column]:
    """The columns some of these Results rows can show on request, in first-seen order."""
    names = list(dict.fromkeys(n for r in rows for n in r.get("optional_metrics") or ()))
    protocols = {r.get("protocol") or "demo" for r in rows}
    return [c for n in names if (c := optional_column(n, kind, protocols)) is not None]


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


def column_labels(rows: list[dict], kind: str = "qa", shown=()) -> list[str]:
    """Every value column of these rows: :func:`row_columns`, then :func:`extra_columns`,
    then the columns ``shown`` on request (:class:`Column`, of :func:`optional_columns`)."""
    labels = [c.label for c in row_columns(rows, kind)] + extra_columns(rows)
    return labels + [c.label for c in shown if c.label not in labels]
