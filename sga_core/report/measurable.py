"""Can this experiment measure forgetting? (docs/measurability.md)

Unlearning is measured between two models: the Original (trained on the forget set) and the
Retained (never saw it). If the Original did not memorise the forget set, the two score the
same on every forget-side metric, and no run can be said to have forgotten anything: a
"best" value would rank noise. This module compares the two on the forget-side metrics,
row by row (paired bootstrap over the forget rows, :func:`sga_core.report.uncertainty.
compare_runs`), and says whether they can be told apart. Its verdict is computed once and
drives every surface: the Results page's banner, its table and panels, the paper's table,
the r suggestion, and ``python -m sga_core results``.

The rule (docs/spec.md#510-can-this-experiment-measure-forgetting):

- the forget-side metrics are the Results columns that read the forget set and have per-row
  inputs: QA: forget ROUGE-L and forget probability (FQ is computed against the Retained
  model itself); text: VerbMem, KnowMem forget, MIA AUC, PrivLeak, forget perplexity; the
  copyright task: its ROUGE-L; either: ES and EM where evaluated;
- PrivLeak is the Original's against the Retained's own Min-K% AUC, recomputed on each
  resample of the rows (the Retained's PrivLeak is 0 by construction: it is the reference),
  so a Retained evaluated without a reference still counts;
- a metric *separates* the two models when the 95% interval of Original - Retained lies
  entirely beyond :func:`negligible` on the side of memorisation (the Original better on the
  forget set than the Retained): higher for the Original on VerbMem, KnowMem forget, MIA
  AUC, ROUGE-L, probability, ES and EM (metrics that fall as a model forgets), lower on
  PrivLeak (-100 = memorised, 0 = like the Retained) and on forget perplexity. An interval
  that excludes 0 but not the negligible gap is no memorisation this metric can measure;
- a metric *rules out* memorisation when its interval stays short of the negligible gap on
  that side (a gap of that size or more is excluded): wholly inside the gap, or on the other
  side (the Original LESS memorised than the Retained never counts as memorised);
- one that does neither straddles the gap: "not enough rows to tell";
- verdict: **measurable** when one metric separates them (then only the metrics that separate
  them, and those that do not read the forget set, are ranked: :func:`unranked`); **not
  memorised** when none does and every compared metric rules memorisation out; **too few
  rows** when none separates them but some interval is too wide to rule it out ("not enough
  rows to tell", never "has not memorised"); **no verdict** without an evaluated Original
  and Retained, or without per-row values to compare. The verdict names the metrics that
  decided it.
"""

from __future__ import annotations

import math
from pathlib import Path

from sga_core.metrics.catalog import HIGHER, LOWER, ZERO, spec_of
from sga_core.metrics.muse import auc
from sga_core.report.stats import paired_bootstrap_statistic
from sga_core.report.uncertainty import compare_runs
from sga_core.runs import validate
from sga_core.runs.folder import RunFolder

#: the forget-side metrics, by summary key (the Results columns that read the forget rows)
FORGET_SIDE = ("forget_rouge", "forget_probability", "forget_verbmem", "forget_knowmem",
               "mia_auc", "privleak", "forget_perplexity", "forget_completion_rouge",
               "forget_extraction_strength", "forget_exact_memorization")
NOT_MEASURABLE = ("the Original has not memorised the forget set: no forgetting can be "
                  "measured; train the Original longer, or check the sets")
TOO_FEW_ROWS = ("not enough rows to tell whether the Original memorised the forget set: no "
                "forgetting can be measured yet; evaluate more rows")
#: the verdict's states
MEASURABLE, NOT_MEMORISED, TOO_FEW, NO_VERDICT = ("measurable", "not memorised",
                                                  "too few rows", "no verdict")
#: a gap below which a difference is negligible, on the metric's own scale (0-1 metrics:
#: 0.05; PrivLeak's -100..100 points: 10; perplexity: 10% of the Retained's, below)
NEGLIGIBLE = {"privleak": 10.0}
NEGLIGIBLE_DEFAULT = 0.05
PERPLEXITY_SHARE = 0.1


def _memorised_sign(name: str, kind: str) -> int:
    """+1 when a memorising model scores higher on ``name``, -1 when lower."""
    direction = spec_of(name, kind).direction
    return {LOWER: 1, HIGHER: -1, ZERO: -1}[direction]


def negligible(name: str, retained: float | None = None) -> float:
    """The gap between the Original and the Retained that counts as no memorisation on
    ``name`` (``retained``: the Retained's value, which scales a perplexity's)."""
    if name.endswith("_perplexity"):
        ref = retained if isinstance(retained, (int, float)) and math.isfinite(retained) \
            else None
        return PERPLEXITY_SHARE * abs(ref) if ref else math.inf
    return NEGLIGIBLE.get(name, NEGLIGIBLE_DEFAULT)


DIFFERS, NEGLIGIBLE_DIFF, NOISE = "A ≠ B", "A ≠ B, negligibly", "within noise"


def difference(row: dict) -> str:
    """The verdict on one paired comparison of two runs (a :func:`compare_runs` row):
    ``DIFFERS`` when its interval excludes 0 and reaches beyond :func:`negligible` (B's value
    scales a perplexity's gap); ``NEGLIGIBLE_DIFF`` when it excludes 0 but lies wholly
    inside the gap (a 0.8% perplexity difference is real and meaningless); ``NOISE`` when
    it holds 0. The same gap as the measurability verdict's."""
    if not row.get("clear"):
        return NOISE
    gap = negligible(row["metric"], row.get("b"))
    lo, hi = row.get("lo"), row.get("hi")
    inside = lo is not None and hi is not None and -gap < lo and hi < gap
    return NEGLIGIBLE_DIFF if inside else DIFFERS


def _gap(row: dict) -> float:
    return negligible(row["metric"], row.get("retained", row.get("b")))


def separates(row: dict, kind: str) -> bool:
    """Whether a compared metric (a :func:`compare_runs` row, A = the Original, B = the
    Retained) tells the two apart on the side of memorisation: its whole interval lies at
    or beyond the :func:`negligible` gap there (excluding 0 is not enough: forget PPL 63.6
    vs 68.2, interval [-6.61, -2.81], is inside a gap of 6.82 and measures nothing)."""
    lo, hi = row.get("lo"), row.get("hi")
    if lo is None or hi is None:
        return False
    gap = _gap(row)
    return lo >= gap if _memorised_sign(row["metric"], kind) > 0 else hi <= -gap


def rules_out(row: dict, kind: str) -> bool:
    """Whether a compared metric's interval excludes a memorisation gap of
    :func:`negligible` size or more (so it says "not memorised", not "cannot tell")."""
    lo, hi = row.get("lo"), row.get("hi")
    if lo is None or hi is None:
        return False
    gap = _gap(row)
    return hi < gap if _memorised_sign(row["metric"], kind) > 0 else lo > -gap


def _min_k(records: list[dict], set_name: str) -> dict:
    out = {}
    for r in records:
        v = r.get("min_k_score")
        if r.get("set") == set_name and r.get("index") is not None and \
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out[r["index"]] = (v, r.get("question") or r.get("prompt") or r.get("reference"))
    return out


def _leak(groups: list[list]) -> float | None:
    """PrivLeak of the first scores of each pair against the second's AUC (the reference)."""
    a = auc([p[0] for p in groups[0]], [p[0] for p in groups[1]]).value
    ref = auc([p[1] for p in groups[0]], [p[1] for p in groups[1]]).value
    if a is None or ref is None or ref == 1.0:
        return None
    return ((1.0 - a) - (1.0 - ref)) / (1.0 - ref) * 100.0


def privleak_row(original: Path, retained: Path, n_boot: int) -> dict | None:
    """PrivLeak of the Original against the Retained's own AUC on the same rows, each
    resample of the forget and holdout rows scoring both (the Retained's value is 0: it is
    the reference). None without Min-K% scores of both sets in both evaluations."""
    ra, rb = RunFolder(original).per_sample(), RunFolder(retained).per_sample()
    groups = []
    for s in ("forget", "holdout"):
        a, b = _min_k(ra, s), _min_k(rb, s)
        same = sorted(i for i in a.keys() & b.keys() if a[i][1] == b[i][1])
        if not same:
            return None
        groups.append([(a[i][0], b[i][0]) for i in same])
    iv = paired_bootstrap_statistic(groups, groups, _leak, lambda g: 0.0, n_boot=n_boot)
    if iv.mean is None:
        return None
    return {"metric": "privleak", "label": spec_of("privleak", "text").label,
            "a": iv.mean, "b": 0.0, "diff": iv.mean, "lo": iv.lo, "hi": iv.hi,
            "n": min(len(g) for g in groups)}


def _fmt(v) -> str:
    return "—" if v is None else f"{v:.3g}"


def _interval(r: dict) -> str:
    return f"{r['label']} {_fmt(r['original'])} vs {_fmt(r['retained'])}, " \
           f"difference [{_fmt(r['lo'])}, {_fmt(r['hi'])}] over {r['n']} rows"


HEADLINES = {MEASURABLE: "Forgetting can be measured.",
             NOT_MEMORISED: "Cannot measure forgetting.", TOO_FEW: "Cannot measure forgetting.",
             NO_VERDICT: "Whether forgetting can be measured: no verdict."}


def verdict_detail(v: dict) -> str:
    """What the verdict rests on, in words: which metrics decided it."""
    state = v.get("state")
    if state == MEASURABLE:
        rest = unranked(v)
        return ("The Original differs from the Retained on the forget set; decided by " +
                ", ".join(v["decided_by"]) + " (the 95% interval of the difference lies "
                "beyond the negligible gap on the side of memorisation)." +
                (" Not on " + ", ".join(rest) + ": they cannot show forgetting here, so no "
                 "best value is marked and no r suggested by them." if rest else ""))
    if state == NOT_MEMORISED:
        return (NOT_MEASURABLE[0].upper() + NOT_MEASURABLE[1:] + ". Decided by " +
                ", ".join(v["decided_by"]) + ": every interval rules out a memorisation gap.")
    if state == TOO_FEW:
        wide = [r for r in v["rows"] if r["decides"] == "too wide"]
        return (TOO_FEW_ROWS[0].upper() + TOO_FEW_ROWS[1:] + ". Decided by " +
                "; ".join(_interval(r) for r in wide) + ": too wide to decide either way.")
    return f"({v.get('reason')})"


def verdict_text(v: dict) -> str:
    """The verdict in one line, the same on every surface (Results page, r* page, CLI)."""
    return HEADLINES[v.get("state") or NO_VERDICT] + " " + verdict_detail(v)


def _no_verdict(reason: str) -> dict:
    out = {"measurable": None, "state": NO_VERDICT, "rows": [], "message": None,
           "reason": reason, "decided_by": []}
    return {**out, "text": verdict_text(out)}


def measurability(original: Path, retained: Path, n_boot: int = 1000) -> dict:
    """Compare the Original and the Retained runs (folders) on the forget-side metrics.

    Returns ``measurable`` (True, False, or None = no verdict), ``state`` (one of
    :data:`MEASURABLE`, :data:`NOT_MEMORISED`, :data:`TOO_FEW`, :data:`NO_VERDICT`),
    ``rows`` (each compared metric: ``metric``, ``label``, ``original``, ``retained``,
    ``diff``, ``lo``, ``hi``, ``n``, ``separates``, ``decides``: "separates", "rules out"
    or "too wide"), ``decided_by`` (the labels of the metrics that decided it),
    ``message`` (the banner when not measurable, else None), ``text`` (the verdict in one
    line: :func:`verdict_text`) and ``reason`` (why there is no verdict). A damaged
    evaluation gives no verdict, with the damage as its reason."""
    try:
        summaries = [RunFolder(d).summary() for d in (original, retained)]
    except validate.Damaged as exc:
        return _no_verdict(f"cannot read an evaluation: {exc}")
    if not all(summaries):
        missing = [n for n, s in zip(("Original", "Retained"), summaries) if not s]
        return _no_verdict(f"the {' and the '.join(missing)} "
                           f"{'is' if len(missing) == 1 else 'are'} not evaluated")
    kind = summaries[0].get("task", "qa")
    try:
        cmp = compare_runs(original, retained, n_boot=n_boot)["rows"]
        leak = privleak_row(original, retained, n_boot) if kind == "text" else None
    except validate.Damaged as exc:
        return _no_verdict(f"cannot read an evaluation: {exc}")
    # PrivLeak against the Retained itself, whatever reference each evaluation was given
    # (none where the Retained's own AUC is 1: PrivLeak is undefined there)
    cmp = [r for r in cmp if r["metric"] != "privleak"] + ([leak] if leak else [])
    rows = []
    for r in cmp:
        if r["metric"] not in FORGET_SIDE:
            continue
        row = {"metric": r["metric"], "label": r["label"], "original": r["a"],
               "retained": r["b"], "diff": r["diff"], "lo": r["lo"], "hi": r["hi"],
               "n": r["n"]}
        row["separates"] = separates(row, kind)
        row["decides"] = ("separates" if row["separates"] else
                          "rules out" if rules_out(row, kind) else "too wide")
        rows.append(row)
    rows.sort(key=lambda r: FORGET_SIDE.index(r["metric"]))
    if not rows:
        return _no_verdict("no forget-side metric with per-row values in both evaluations "
                           "(re-evaluate them)")
    if any(r["separates"] for r in rows):
        state, decided, message = MEASURABLE, "separates", None
    elif all(r["decides"] == "rules out" for r in rows):
        state, decided, message = NOT_MEMORISED, "rules out", NOT_MEASURABLE
    else:
        state, decided, message = TOO_FEW, "too wide", TOO_FEW_ROWS
    out = {"measurable": state == MEASURABLE, "state": state, "rows": rows,
           "message": message, "reason": None,
           "decided_by": [r["label"] for r in rows if r["decides"] == decided]}
    return {**out, "text": verdict_text(out)}


def can_rank(verdict: dict | None) -> bool:
    """Whether a surface may mark best values or suggest an r: not when the experiment
    cannot measure forgetting (not memorised, or too few rows to tell)."""
    return not verdict or verdict.get("measurable") is not False


UNRANKED_WHY = {"rules out": "the Original is no more memorised than the Retained on it",
                "too wide": "too few rows to tell the Original from the Retained on it"}


def unranked(verdict: dict | None) -> dict[str, str]:
    """The forget-side columns (by label) that get no best value and suggest no r although
    forgetting can be measured, each with why: those that do not themselves tell the
    Original from the Retained. Forgetting measured on forget PPL alone says nothing of
    VerbMem; a best VerbMem there would rank noise. Empty when nothing can be ranked at all
    (:func:`can_rank` decides that) or without a verdict."""
    if not verdict or verdict.get("state") != MEASURABLE:
        return {}
    return {r["label"]: UNRANKED_WHY[r["decides"]] for r in verdict.get("rows") or []
            if not r.get("separates")}


def table_verdict(rows: list[dict], root, n_boot: int = 1000) -> dict:
    """:func:`measurability` for the Results rows of a project: its Original and Retained
    rows' runs under ``root``."""
    ids = {r["run"]: r["run_id"] for r in rows if r.get("run") in ("Original", "Retained")}
    missing = [n for n in ("Original", "Retained") if n not in ids]
    if missing:
        return _no_verdict(f"no evaluated {' and no '.join(missing)} row")
    return measurability(Path(root) / ids["Original"], Path(root) / ids["Retained"],
                         n_boot=n_boot)
