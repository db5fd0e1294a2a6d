"""Metric versus the swept setting (SGA's r; alpha for Task Vector and WHP): the groups of
Results rows a plot can show, their points, their spread across seeds, and the suggested
value with its uncertainty. Differences between two values are paired by seed (the same
seed gives the same data order, docs/spec.md#15-data-order) when they share seeds. No Streamlit, no
torch."""

from __future__ import annotations

from sga_core.metrics.catalog import HIGHER, LOWER, PROTOCOL_NAMES, table_columns
from sga_core.report.columns import REFERENCE_ROWS, column_labels
from sga_core.report.measurable import (
    FORGET_SIDE,
    can_rank,
    negligible,
    unranked,
    verdict_text,
)
from sga_core.report.ranking import beyond_gap, value_of
from sga_core.report.seeds import fmt_interval, groups
from sga_core.report.settings import configuration, differing_settings, show_setting, signature
from sga_core.report.stats import compare_by_seed, mean, t_interval


def swept_value(row: dict):
    """The value of the setting a row's method sweeps (``sweep_value``; rows made without it:
    r)."""
    return row["sweep_value"] if row.get("sweep_value") is not None else row.get("r")


def r_group_members(rows: list[dict]) -> dict[str, list[dict]]:
    """What a metric-versus-r plot can show, name -> its rows: each sweep, and all runs of a
    method, with two or more values of the method's sweep setting (SGA: r; Task Vector,
    WHP: alpha), split so that the runs of one group differ in that value only (every other
    setting of :func:`run_settings` but the seed matches: steps, learning rate, ...; the
    seeds of a configuration are its replicates). Each member's ``r`` is its swept value
    (the x of the plot; :func:`sweep_param_of` names the setting). The rows of one group
    are the ``members`` :func:`r_bands` and :func:`suggest_r` work on.
    A split group is named by its settings ("all sga runs · 20 steps")."""
    runs = [{**r, "r": swept_value(r), "sweep_param": r.get("sweep_param") or "r"}
            for r in rows if swept_value(r) is not None and r["run"] not in REFERENCE_ROWS]
    out: dict[str, list[dict]] = {}

    def add(name: str, members: list[dict]) -> None:
        parts: dict[str, list[dict]] = {}
        for r in members:
            parts.setdefault(signature(configuration(r)), []).append(r)
        parts = {k: v for k, v in parts.items() if len({r["r"] for r in v}) >= 2}
        differ = differing_settings({k: configuration(v[0]) for k, v in parts.items()})
        for key, part in parts.items():
            words = [show_setting(k, part[0]["settings"][k]) for k in differ.get(key, [])]
            out[" · ".join([name, *words]) if len(parts) > 1 else name] = part

    for sweep in sorted({r["sweep"] for r in runs if r.get("sweep")}):
        add(sweep, [r for r in runs if r.get("sweep") == sweep])
    for method in sorted({r["method"] for r in runs}):
        add(f"all {method} runs", [r for r in runs if r["method"] == method])
    return out


def sweep_param_of(rows: list[dict], sweep: str) -> str:
    """The setting one :func:`r_groups` entry varies: "r" (SGA), "alpha" (Task Vector,
    WHP)."""
    members = r_group_members(rows).get(sweep) or [{}]
    return members[0].get("sweep_param") or "r"


def r_groups(rows: list[dict]) -> list[str]:
    """The names of :func:`r_group_members`: each sweep, then every unlearning method with
    runs at two or more r values (runs launched one by one, not as a sweep), each split
    where settings other than r differ."""
    return list(r_group_members(rows))


def sweep_series(rows: list[dict], sweep: str, kind: str = "qa") -> dict[str, list]:
    """Metric-versus-r points of one :func:`r_groups` entry, sorted by r; runs at the same r
    (same settings: a re-run) are averaged, ``n`` counts them."""
    labels = column_labels(rows, kind)
    by_r: dict[float, list[dict]] = {}
    for p in r_group_members(rows).get(sweep, []):
        by_r.setdefault(p["r"], []).append(p)

    def mean(vals):
        vals = [v for v in vals if v is not None]
        return sum(vals) / len(vals) if vals else None

    rs = sorted(by_r)
    return {"r": rs, "n": [len(by_r[r]) for r in rs],
            **{c: [mean(p.get(c) for p in by_r[r]) for r in rs] for c in labels}}


# --- over seeds ------------------------------------------------------------------------------

def _by_r(members: list[dict]) -> dict[float, list[dict]]:
    """The runs of one r group (its members: :func:`r_group_members`) by
    r, one per seed and configuration."""
    out: dict[float, list[dict]] = {}
    for g in groups([m for m in members if m.get("r") is not None]):
        out.setdefault(float(g["r"]), []).extend(g["runs"])
    return dict(sorted(out.items()))


def r_bands(rows: list[dict], sweep: str, kind: str = "qa") -> dict:
    """Metric versus r with the spread across seeds, over one :func:`r_groups` entry of the
    Results rows: ``r`` (sorted), per column label (every value column of ``rows``) a list
    of :class:`~sga_core.report.stats.Interval` (one per r), and ``points`` per column: (r, value,
    seed) of every run, for drawing the seeds themselves."""
    by_r = _by_r(r_group_members(rows).get(sweep, []))
    out: dict = {"r": list(by_r), "points": {}}
    for c in column_labels(rows, kind):
        out[c] = [t_interval([m.get(c) for m in runs]) for runs in by_r.values()]
        out["points"][c] = [(r, m.get(c), m.get("seed")) for r, runs in by_r.items()
                            for m in runs if m.get(c) is not None]
    return out


def _seed_values(runs: list[dict], col: str) -> dict:
    """{seed: value} (runs without a seed, or several configurations sharing a seed, are
    averaged under that seed)."""
    acc: dict = {}
    for m in runs:
        if m.get(col) is not None:
            seed = m.get("seed") if m.get("seed") is not None else m["run_id"]
            acc.setdefault(seed, []).append(float(m[col]))
    return {s: mean(v) for s, v in acc.items()}


def _better(direction: str, a: float, b: float) -> bool:
    if direction == HIGHER:
        return a > b
    if direction == LOWER:
        return a < b
    return abs(a) < abs(b)


def suggest_r(rows: list[dict], sweep: str, label: str, kind: str = "qa") -> dict | None:
    """The best r of one :func:`r_groups` entry of the Results rows by one metric (its
    catalog direction), with the uncertainty: ``best`` (r and its
    :class:`~sga_core.report.stats.Interval`), ``others``: for each other r the difference to the
    best (paired by seed where possible) and whether its interval excludes 0, ``n_min``
    (the fewest seeds at any r) and ``param``, the name of the setting it suggests a value
    of (:func:`sweep_param_of`); an other r is ``negligible`` when the best does not beat it
    by more than the metric's negligible gap (:func:`~sga_core.report.ranking.beyond_gap`);
    on a forget-side metric, ``improves``: whether the best beats the Original's value
    (``original``) by that gap (else no r is suggested). None when no r has the metric."""
    spec = next((c for c in table_columns(kind, PROTOCOL_NAMES) if c.label == label), None)
    if spec is None:
        return None
    by_r = _by_r(r_group_members(rows).get(sweep, []))
    excluded = {r: sum(m.get("collapsed") is True for m in runs) for r, runs in by_r.items()}
    excluded = {r: f"{k} of {len(by_r[r])} seeds collapsed" for r, k in excluded.items() if k}
    ivs = {r: t_interval([m.get(label) for m in runs]) for r, runs in by_r.items()
           if r not in excluded}
    ivs = {r: iv for r, iv in ivs.items() if iv.mean is not None}
    if not ivs:
        return {"metric": label, "param": sweep_param_of(rows, sweep), "r": None,
                "excluded": excluded} if excluded else None
    best = None
    for r, iv in ivs.items():
        if best is None or _better(spec.direction, iv.mean, ivs[best].mean):
            best = r
    best_vals = _seed_values(by_r[best], label)
    ref = value_of(rows, "Retained", label)
    others = []
    for r, iv in ivs.items():
        if r == best:
            continue
        diff = compare_by_seed(_seed_values(by_r[r], label), best_vals)
        others.append({"r": r, "interval": iv, "diff": diff, "clear": diff.excludes(0.0),
                       "negligible": not beyond_gap(spec.name, spec.direction,
                                                    ivs[best].mean, iv.mean, ref)})
    # on a forget-side metric, the best must have moved from the Original toward forgetting
    before = value_of(rows, "Original", label) if spec.name in FORGET_SIDE else None
    return {"metric": label, "direction": spec.direction, "r": best, "best": ivs[best],
            "others": others, "n_min": min(iv.n for iv in ivs.values()),
            "param": sweep_param_of(rows, sweep), "excluded": excluded,
            "original": before,
            "improves": before is None or beyond_gap(spec.name, spec.direction,
                                                     ivs[best].mean, before, ref)}


def suggestion_text(s: dict | None, verdict: dict | None = None) -> str:
    """The suggestion of the swept setting's value (``s["param"]``: r, alpha, ...; r when
    not given) in words, with how sure it is. ``verdict``: the project's
    :func:`~sga_core.report.measurable.table_verdict`; where forgetting cannot be measured,
    no value is suggested (a "best" would rank noise), and the verdict says why."""
    if not s:
        return "No evaluated runs with this metric yet."
    p = s.get("param") or "r"
    if not can_rank(verdict):
        return f"No {p} is suggested. " + verdict_text(verdict)
    if s["metric"] in (why := unranked(verdict)):
        return (f"No {p} is suggested by {s['metric']}: {why[s['metric']]}, so it cannot "
                "show forgetting here. " + verdict_text(verdict))
    excluded = s.get("excluded") or {}
    left_out = ("Not suggested, because a seed collapsed there: " + "; ".join(
        f"{p} = {r:g} ({why})" for r, why in sorted(excluded.items())) + ".") if excluded else ""
    if s.get("r") is None:
        return f"No {p} to suggest by {s['metric']}. {left_out}"
    fmt = fmt_interval(s["best"])
    if not s.get("improves", True):  # every value at or short of the Original's
        return (f"No {p} is suggested by {s['metric']}: no {p} improves on the Original's "
                f"{s['original']:.4g} (the closest, {p} = {s['r']:g}, has {fmt}), so none "
                f"forgot anything it measures. {left_out}").strip()
    tied = [o["r"] for o in s["others"] if o["interval"].mean == s["best"].mean]
    if tied:  # equal means: no value is better, whatever the order they were read in
        rs = ", ".join(f"{r:g}" for r in sorted([s["r"], *tied]))
        head = f"No best {p} by {s['metric']}: {p} = {rs} are tied at {fmt} (n = {s['best'].n})."
    elif s["others"] and all(o.get("negligible") for o in s["others"]):
        # a best only by a difference that means nothing on this metric
        rs = ", ".join(f"{o['r']:g}" for o in sorted(s["others"], key=lambda o: o["r"]))
        return (f"No best {p} by {s['metric']}: {p} = {rs} lie within its negligible gap of "
                f"{p} = {s['r']:g} ({fmt}, n = {s['best'].n}), so none is better. " +
                left_out).strip()
    else:
        head = f"Best {s['metric']} at {p} = {s['r']:g}: {fmt} (n = {s['best'].n})."
    if left_out:
        head += " " + left_out
    near = [o for o in s["others"] if o.get("negligible")]
    if near and not tied:
        head += (f" Within {s['metric']}'s negligible gap of it (no better or worse in any "
                 f"way that matters): {p} = " + ", ".join(f"{o['r']:g}" for o in near) + ".")
    if s["n_min"] < 2:
        return (head + f" Some {p} values have a single run, so nothing says whether the "
                "differences are more than seed noise: repeat the sweep over seeds "
                "(Train page: repeat over seeds).")
    rest = [o for o in s["others"] if tied or not o.get("negligible")]
    clear = [o for o in rest if o["clear"]]
    unclear = [o for o in rest if not o["clear"]]
    parts = [head]
    if unclear:
        parts.append("Not distinguishable from it at 95% (the interval of the difference "
                     f"holds 0): {p} = " + ", ".join(f"{o['r']:g}" for o in unclear) + ".")
    if clear:
        parts.append(f"Clearly different (that {p}'s {s['metric']} minus the best's, with "
                     "the 95% interval of the difference): " + ", ".join(
            f"{p} = {o['r']:g} ({o['diff'].mean:+.3g} [{o['diff'].lo:+.3g}, "
            f"{o['diff'].hi:+.3g}], {o['diff'].method})" for o in clear) + ".")
    return " ".join(parts)


def axis_range(values, name: str) -> list[float] | None:
    """A y range for a metric-versus-r panel of metric ``name`` (a summary key) showing
    ``values`` (means and interval bounds): None (the plot's own) where they spread over at
    least the metric's negligible gap (:func:`~sga_core.report.measurable.negligible`: 0.05
    on 0-1 metrics, 10 PrivLeak points, 10% of a perplexity), else that gap centred on
    them, so that a difference of 0.00007 is drawn flat and not across the whole axis."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
            and v == v and abs(v) != float("inf")]
    if not vals:
        return None
    lo, hi = min(vals), max(vals)
    mid = (lo + hi) / 2
    gap = negligible(name, mid)
    if gap == float("inf") or gap <= 0:
        gap = abs(mid) * 0.1 or 0.05
    if hi - lo >= gap:
        return None
    return [mid - gap / 2, mid + gap / 2]
