"""Comparing configurations over seeds: the Results table pooled per configuration (mean,
sd, 95% interval, n).

A *configuration* is a seed group (``group`` in config.yaml: the runs one launch made over
several seeds); a run launched without seeds is a configuration of its own (n = 1). Where a
group holds two evaluated runs with the same seed (a re-run), the newer one counts. The
intervals are Student-t over seeds (:mod:`sga_core.report.stats`, which says why).

A collapsed seed (:mod:`sga_core.report.collapse`) stays in its configuration's mean: leaving
it out would report only the seeds that survived. The configuration says how many of its seeds
collapsed instead (``collapsed``: "1 of 3"), and :func:`sga_core.report.sweeps.suggest_r` never
suggests a value at which a seed collapsed. Metric versus r
with these intervals is :mod:`sga_core.report.sweeps`; the download, :mod:`.export`. No
Streamlit, no torch.
"""

from __future__ import annotations

from sga_core.report.columns import REFERENCE_ROWS, column_labels
from sga_core.report.stats import Interval, t_interval


def group_key(row: dict) -> str:
    return row.get("group") or row["run_id"]


def _per_seed(members: list[dict]) -> list[dict]:
    """One run per seed (the newest where a seed appears twice), in seed order."""
    by_seed: dict = {}
    for m in sorted(members, key=lambda m: (m.get("created_at") or "", m["run_id"])):
        by_seed[m.get("seed") if m.get("seed") is not None else m["run_id"]] = m
    return [by_seed[k] for k in sorted(by_seed, key=str)]


def _label(first: dict) -> str:
    if first["run"] in REFERENCE_ROWS or first.get("method") in (None, "-"):
        return first["run"]
    label = str(first["method"])
    if first.get("sweep_param") and first.get("sweep_value") is not None:
        label += f" {first['sweep_param']}={float(first['sweep_value']):g}"
    elif first.get("r") is not None:
        label += f" r={float(first['r']):g}"
    return label


def groups(rows: list[dict], kind: str = "qa", shown=()) -> list[dict]:
    """One dict per configuration, in the order of ``rows`` (Results order): ``label``
    (unique), ``group``, ``method``, ``r``, ``K``, ``sweep``, ``n``, ``seeds``, ``runs``
    (its member rows, one per seed), and per column label (:func:`column_labels`: every
    protocol's columns the rows were evaluated under, lm-eval tasks too, and the columns
    ``shown`` on request: each attack's AUC and PrivLeak, ...) an :class:`Interval` over
    seeds."""
    cols = column_labels(rows, kind, shown)
    order: list[str] = []
    members: dict[str, list[dict]] = {}
    for row in rows:
        key = group_key(row)
        if key not in members:
            order.append(key)
            members[key] = []
        members[key].append(row)
    out = []
    for key in order:
        runs = _per_seed(members[key])
        first = runs[0]
        g = {"label": _label(first), "group": key, "method": first.get("method"),
             "r": first.get("r"), "K": first.get("K"), "sweep": first.get("sweep"),
             "n": len(runs), "seeds": [m.get("seed") for m in runs], "runs": runs,
             "collapsed": sum(m.get("collapsed") is True for m in runs),
             "collapse_known": any(m.get("collapsed") is not None for m in runs)}
        for c in cols:
            g[c] = t_interval([m.get(c) for m in runs])
        out.append(g)
    counts: dict[str, int] = {}
    for g in out:
        counts[g["label"]] = counts.get(g["label"], 0) + 1
    for g in out:
        if counts[g["label"]] > 1 and g["label"] not in REFERENCE_ROWS:
            g["label"] += f" · {g['group']}"
    return out


def has_seed_groups(rows: list[dict]) -> bool:
    """Whether any configuration has two or more evaluated seeds."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[group_key(row)] = counts.get(group_key(row), 0) + 1
    return any(v > 1 for v in counts.values())


def fmt_interval(iv: Interval, digits: int = 3) -> str | None:
    """``0.41 [0.29, 0.53] sd 0.048`` (n >= 2), the value alone for n = 1, None for none."""
    if iv.mean is None:
        return None
    text = f"{iv.mean:.{digits}g}"
    if iv.lo is not None:
        text += f" [{iv.lo:.{digits}g}, {iv.hi:.{digits}g}] sd {iv.sd:.2g}"
    return text


def collapsed_text(g: dict) -> str | None:
    """How many of a configuration's seeds collapsed, in words ("no", "1 of 3", "all 2");
    None where no member was judged (reference rows, no evaluated Original)."""
    if not g["collapse_known"]:
        return None
    k, n = g["collapsed"], g["n"]
    return "no" if k == 0 else (f"all {n}" if k == n and n > 1 else f"{k} of {n}")


def group_display(rows: list[dict], kind: str = "qa", shown=()) -> list[dict]:
    """The pooled Results table: one row per configuration, each metric as text
    (:func:`fmt_interval`; ``shown``: the columns shown on request too), n, the seeds, and
    how many seeds collapsed."""
    cols = column_labels(rows, kind, shown)
    out = []
    for g in groups(rows, kind, shown):
        row = {"configuration": g["label"], "method": g["method"], "r": g["r"], "K": g["K"],
               "n": g["n"], "seeds": ", ".join(str(s) for s in g["seeds"] if s is not None),
               "collapsed": collapsed_text(g)}
        row.update({c: fmt_interval(g[c]) for c in cols})
        out.append(row)
    return out
