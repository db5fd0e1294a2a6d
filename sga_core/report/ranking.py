"""Which value of a column is the best: one that beats every other candidate beyond noise.

A "best" marks a run as better than the others. Two runs 0.0965 and 0.0983 apart on VerbMem
over 8 rows are not: the difference is smaller than anything the metric can mean, and the
paired interval of it holds 0. So a value is the best of its column only when, against every
other candidate (the unlearning runs that did not collapse):

- it is better by more than the metric's negligible gap
  (:func:`sga_core.report.measurable.negligible`, the gap the measurability verdict and the
  paired comparison use: 0.05 on 0-1 metrics, 10 points of PrivLeak, 10% of the Retained's
  perplexity); forget quality, a KS test's p-value that spans orders of magnitude, by more
  than a factor of :data:`FQ_RATIO`; PrivLeak, best closest to 0, by its distance to 0;
- and, where both runs have per-row values of the metric on the same rows
  (:func:`sga_core.report.uncertainty.compare_runs`), the 95% interval of their paired
  difference lies wholly on the better side of 0.

On a forget-side metric (:data:`~sga_core.report.measurable.FORGET_SIDE`: VerbMem, forget
ROUGE-L, ...) the best must also beat the Original by the same rule: a run whose VerbMem
rose above the Original's forgot nothing there, even where it beats the other runs (a new
user's study saw GA's 0.25 marked best against SGA's 0.375, both above the Original's
0.23).

The paper's table highlights its top 2 values per column: the top ``k`` (``k`` at most 2)
are highlighted only when every one of them beats every value below them by that rule
(:func:`top_values`). No Streamlit here; the Results page, the paper's table and
``python -m sga_core results`` all call these.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from sga_core.metrics.catalog import HIGHER, LOWER, ZERO
from sga_core.report.columns import REFERENCE_ROWS, row_columns
from sga_core.report.measurable import FORGET_SIDE, negligible

#: forget quality differs meaningfully by a ratio, not a difference: 0.3 beats 0.2, 1e-5
#: and 1.2e-5 are the same
FQ_RATIO = 1.25
#: how a pair of runs is compared: (run id A, run id B) -> {metric: compare_runs row}
Pairing = Callable[[str, str], dict]


def _score(value: float, direction: str) -> float:
    """Higher is better: the value itself, its negative, or minus its distance to 0."""
    return {HIGHER: value, LOWER: -value, ZERO: -abs(value)}[direction]


def beyond_gap(name: str, direction: str, a: float, b: float, ref: float | None) -> bool:
    """Whether ``a`` is better than ``b`` on metric ``name`` by more than its negligible
    gap (``ref``: the Retained's value, which scales a perplexity's gap)."""
    if _score(a, direction) <= _score(b, direction):
        return False
    if name == "forget_quality":
        if a <= 0 or b <= 0:
            return True  # better than 0 (no p-value can be) by any ratio
        return a / b > FQ_RATIO if direction == HIGHER else b / a > FQ_RATIO
    gap = negligible(name, ref)
    if math.isinf(gap):  # a perplexity without a reference: the better one's value scales it
        gap = negligible(name, a)
    return _score(a, direction) - _score(b, direction) > gap


def _paired_side(row: dict | None, direction: str, a: float, b: float) -> bool:
    """Whether the paired interval of A - B (``row``, None: no per-row values) lies wholly on
    the side of A being better. PrivLeak (closest to 0) reads it when both values share a
    sign; otherwise only the gap decides."""
    if row is None or row.get("lo") is None or row.get("hi") is None:
        return True
    if direction == ZERO:
        if a * b <= 0:
            return True
        direction = HIGHER if a < 0 else LOWER
    return row["lo"] > 0 if direction == HIGHER else row["hi"] < 0


def pairing(root) -> Pairing:
    """Paired comparisons of runs under ``root``, each pair computed once: (A, B) -> the
    :func:`~sga_core.report.uncertainty.compare_runs` rows by metric; {} when either run
    has no per-row values, or a damaged one."""
    from sga_core.report.uncertainty import compare_runs
    from sga_core.runs.validate import Damaged

    memo: dict[tuple[str, str], dict] = {}

    def pair(a: str, b: str) -> dict:
        if (a, b) not in memo:
            try:
                rows = compare_runs(Path(root) / a, Path(root) / b, n_boot=1000)["rows"]
            except (Damaged, OSError):
                rows = []
            memo[(a, b)] = {r["metric"]: r for r in rows}
        return memo[(a, b)]

    return pair


def beats(col, a: dict, b: dict, ref: float | None, pair: Pairing | None) -> bool:
    """Whether row ``a`` is better than row ``b`` in column ``col`` beyond noise (the
    module's rule)."""
    va, vb = a[col.label], b[col.label]
    if not beyond_gap(col.name, col.direction, va, vb, ref):
        return False
    if pair is None or not a.get("run_id") or not b.get("run_id"):
        return True
    return _paired_side(pair(a["run_id"], b["run_id"]).get(col.name), col.direction, va, vb)


def _candidates(rows: list[dict], label: str) -> list[dict]:
    """The values that compete: unlearning runs' that did not collapse, without a caution
    (``<label> (note)``: :func:`sga_core.report.table.value_note`)."""
    return [r for r in rows if r["run"] not in REFERENCE_ROWS and r.get("collapsed") is not True
            and r.get(label) is not None and not r.get(f"{label} (note)")]


def value_of(rows: list[dict], run: str, label: str) -> float | None:
    """The value in column ``label`` of the row named ``run`` ("Original", "Retained"),
    None without one: the Retained's scales a perplexity's gap, the Original's is the bar a
    forget-side best must clear."""
    return next((r.get(label) for r in rows if r.get("run") == run), None)


def ranked(rows: list[dict], columns, n: int = 1, skip=(), pair: Pairing | None = None
           ) -> dict[str, list[float]]:
    """Per column (of ``columns``, catalog entries with ``name``, ``label``, ``direction``),
    the top ``k`` values (``k`` at most ``n``) that each beat every value below them beyond
    noise; a column whose top value beats nothing gets none. ``skip``: labels that get
    none; ``pair``: paired comparisons of runs (:func:`pairing`), None for the gap alone."""
    out = {}
    for col in columns:
        if col.label in skip:
            continue
        cands = sorted(_candidates(rows, col.label),
                       key=lambda r: -_score(r[col.label], col.direction))
        ref = value_of(rows, "Retained", col.label)
        before = _original(rows, col) if col.name in FORGET_SIDE else None
        for k in range(min(n, len(cands) - 1), 0, -1):
            if all(beats(col, top, low, ref, pair) for top in cands[:k] for low in cands[k:]) \
                    and (before is None or all(beats(col, top, before, ref, pair)
                                               for top in cands[:k])):
                out[col.label] = [r[col.label] for r in cands[:k]]
                break
    return out


def _original(rows: list[dict], col) -> dict | None:
    """The Original's row where it has a value of ``col``: on a forget-side metric, a best
    must have moved from it toward forgetting (a run worse than the model it unlearned from
    forgot nothing, however it compares with the other runs)."""
    return next((r for r in rows if r["run"] == "Original" and r.get(col.label) is not None),
                None)


def best_values(rows: list[dict], kind: str = "qa", skip=(), root=None) -> dict[str, float]:
    """The best value of each Results column (by label), among the unlearning runs that did
    not collapse (the Original, the Retained and runs :func:`~sga_core.report.collapse.
    mark_collapse` flagged do not compete): one that beats every other beyond noise (the
    module's rule; ``root``: the runs folder, for their paired intervals). One run, equal
    values, or values within noise of each other: no best. ``skip``: labels of columns that
    get none (:func:`sga_core.report.measurable.unranked`)."""
    pair = pairing(root) if root is not None else None
    return {label: vals[0] for label, vals in
            ranked(rows, row_columns(rows, kind), 1, skip, pair).items()}


def top_values(rows: list[dict], columns, n: int = 2, skip=(), root=None
               ) -> dict[str, list[float]]:
    """The paper table's highlights: per column, its top ``n`` values that beat the rest
    beyond noise (fewer, or none, where they do not)."""
    return ranked(rows, columns, n, skip, pairing(root) if root is not None else None)
