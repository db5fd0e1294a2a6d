"""Can this experiment measure forgetting? (docs/measurability.md)

Unlearning is measured between two models: the Original (trained on the forget set) and the
Retained (never saw it). If the Original did not memorise the forget set, the two score the
same on every forget-side metric, and no run can be said to have forgotten anything: a
"best" value would rank noise. This module compares the two on the forget-side metrics,
row by row (paired bootstrap over the forget rows, :func:`sga_core.report.uncertainty.
compare_runs`), and says whether they can be told apart.

The rule (docs/spec.md#510-can-this-experiment-measure-forgetting):

- the forget-side metrics are the Results columns that read the forget set and have per-row
  inputs: QA: forget ROUGE-L and forget probability (FQ is computed against the Retained
  model itself); text: VerbMem, KnowMem forget, PrivLeak; the copyright task: its ROUGE-L;
- a metric *separates* the two models when the 95% interval of Original - Retained excludes
  0 on the side of memorisation: higher for the Original on VerbMem, KnowMem forget, ROUGE-L
  and probability (metrics that fall as a model forgets), lower on PrivLeak (-100 =
  memorised, 0 = like the Retained);
- the experiment is **not measurable** when at least one forget-side metric was compared and
  none separates the two; **measurable** when one does; **unknown** (no verdict) without an
  evaluated Original and Retained, or without per-row values to compare.
"""

from __future__ import annotations

from pathlib import Path

from sga_core.metrics.catalog import HIGHER, LOWER, ZERO, spec_of
from sga_core.report.uncertainty import compare_runs
from sga_core.runs import validate
from sga_core.runs.folder import RunFolder

#: the forget-side metrics, by summary key (the Results columns that read the forget rows)
FORGET_SIDE = ("forget_rouge", "forget_probability", "forget_verbmem", "forget_knowmem",
               "privleak", "forget_completion_rouge")
NOT_MEASURABLE = ("the Original has not memorised the forget set: no forgetting can be "
                  "measured; train the Original longer, or check the sets")


def _memorised_sign(name: str, kind: str) -> int:
    """+1 when a memorising model scores higher on ``name``, -1 when lower."""
    direction = spec_of(name, kind).direction
    return {LOWER: 1, HIGHER: -1, ZERO: -1}[direction]


def separates(row: dict, kind: str) -> bool:
    """Whether a compared metric (a :func:`compare_runs` row, A = the Original, B = the
    Retained) tells the two apart on the side of memorisation."""
    lo, hi = row.get("lo"), row.get("hi")
    if lo is None or hi is None:
        return False
    return lo > 0 if _memorised_sign(row["metric"], kind) > 0 else hi < 0


def measurability(original: Path, retained: Path, n_boot: int = 1000) -> dict:
    """Compare the Original and the Retained runs (folders) on the forget-side metrics.

    Returns ``measurable`` (True, False, or None = no verdict), ``rows`` (each compared
    metric: ``metric``, ``label``, ``original``, ``retained``, ``diff``, ``lo``, ``hi``,
    ``n``, ``separates``), ``message`` (the banner when not measurable, else None) and
    ``reason`` (why there is no verdict). A damaged evaluation gives no verdict, with the
    damage as its reason."""
    out = {"measurable": None, "rows": [], "message": None, "reason": None}
    try:
        summaries = [RunFolder(d).summary() for d in (original, retained)]
    except validate.Damaged as exc:
        return {**out, "reason": f"cannot read an evaluation: {exc}"}
    if not all(summaries):
        missing = [n for n, s in zip(("Original", "Retained"), summaries) if not s]
        return {**out, "reason": f"the {' and the '.join(missing)} "
                                 f"{'is' if len(missing) == 1 else 'are'} not evaluated"}
    kind = summaries[0].get("task", "qa")
    try:
        cmp = compare_runs(original, retained, n_boot=n_boot)
    except validate.Damaged as exc:
        return {**out, "reason": f"cannot read an evaluation: {exc}"}
    rows = []
    for r in cmp["rows"]:
        if r["metric"] not in FORGET_SIDE:
            continue
        rows.append({"metric": r["metric"], "label": r["label"], "original": r["a"],
                     "retained": r["b"], "diff": r["diff"], "lo": r["lo"], "hi": r["hi"],
                     "n": r["n"], "separates": separates(r, kind)})
    if not rows:
        return {**out, "reason": "no forget-side metric with per-row values in both "
                                 "evaluations (re-evaluate them)"}
    ok = any(r["separates"] for r in rows)
    return {"measurable": ok, "rows": rows, "message": None if ok else NOT_MEASURABLE,
            "reason": None}


def can_rank(verdict: dict | None) -> bool:
    """Whether the Results table may mark best values: not when the experiment cannot
    measure forgetting."""
    return not verdict or verdict.get("measurable") is not False


def table_verdict(rows: list[dict], root) -> dict:
    """:func:`measurability` for the Results rows of a project: its Original and Retained
    rows' runs under ``root``."""
    ids = {r["run"]: r["run_id"] for r in rows if r.get("run") in ("Original", "Retained")}
    missing = [n for n in ("Original", "Retained") if n not in ids]
    if missing:
        return {"measurable": None, "rows": [], "message": None,
                "reason": f"no evaluated {' and no '.join(missing)} row"}
    return measurability(Path(root) / ids["Original"], Path(root) / ids["Retained"])
