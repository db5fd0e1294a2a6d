"""Comparing configurations over seeds: the Results table pooled per configuration (mean,
sd, 95% interval, n), metric-versus-r with intervals, the r suggestion with its
uncertainty, and the CSV/JSON export with one row per seed and one per group.

A *configuration* is a seed group (``group`` in config.yaml: the runs one launch made over
several seeds); a run launched without seeds is a configuration of its own (n = 1). Where a
group holds two evaluated runs with the same seed (a re-run), the newer one counts. The
intervals are Student-t over seeds (:mod:`sga_core.stats`, which says why); differences
between two configurations are paired by seed (the same seed gives the same data order,
SPEC 1) when they share seeds. No Streamlit, no torch.
"""

from __future__ import annotations

from sga_core.metrics.catalog import HIGHER, LOWER, PROTOCOL_NAMES, table_columns
from sga_core.metrics.utility_parts import component_label, components, lowest
from sga_core.stats import Interval, compare_by_seed, mean, t_interval

REFERENCE_ROWS = ("Original", "Retained")
KEY_FIELDS = ("run", "run_id", "method", "r", "K", "sweep", "state", "seed", "group")


def run_fields(run: dict, summary: dict | None) -> dict:
    """What a Results row adds to a run for comparisons: its seed, its group, when it was
    made, and Model Utility's 9 components (named ``MU: <part>``) with the lowest one."""
    parts = components(summary)
    out = {"seed": run.get("seed"), "group": run.get("group"),
           "created_at": run.get("created_at")}
    if parts:
        out.update({f"MU: {component_label(k)}": v for k, v in parts.items()})
        low = lowest(parts)
        out["MU lowest"] = component_label(low) if low else None
    return out


def group_key(row: dict) -> str:
    return row.get("group") or row["run_id"]


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


def groups(rows: list[dict], kind: str = "qa") -> list[dict]:
    """One dict per configuration, in the order of ``rows`` (Results order): ``label``
    (unique), ``group``, ``method``, ``r``, ``K``, ``sweep``, ``n``, ``seeds``, ``runs``
    (its member rows, one per seed), and per column label (:func:`column_labels`: every
    protocol's columns the rows were evaluated under, lm-eval tasks too) an
    :class:`Interval` over seeds."""
    cols = column_labels(rows, kind)
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
             "n": len(runs), "seeds": [m.get("seed") for m in runs], "runs": runs}
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


def group_display(rows: list[dict], kind: str = "qa") -> list[dict]:
    """The pooled Results table: one row per configuration, each metric as text
    (:func:`fmt_interval`), n and the seeds."""
    cols = column_labels(rows, kind)
    out = []
    for g in groups(rows, kind):
        row = {"configuration": g["label"], "method": g["method"], "r": g["r"], "K": g["K"],
               "n": g["n"], "seeds": ", ".join(str(s) for s in g["seeds"] if s is not None)}
        row.update({c: fmt_interval(g[c]) for c in cols})
        out.append(row)
    return out


def export_rows(rows: list[dict], kind: str = "qa") -> list[dict]:
    """The CSV/JSON download: one row per seed (``level: seed``, the run's values) and one
    per configuration (``level: group``: per metric its mean, sd, interval bounds and n)."""
    cols = column_labels(rows, kind)
    out = [{"level": "seed", "configuration": None, **r} for r in rows]
    for g in groups(rows, kind):
        for m in g["runs"]:
            next(o for o in out if o.get("run_id") == m["run_id"])["configuration"] = g["label"]
        row = {"level": "group", "configuration": g["label"], "group": g["group"],
               "method": g["method"], "r": g["r"], "K": g["K"], "sweep": g["sweep"],
               "n": g["n"], "seeds": ", ".join(str(s) for s in g["seeds"] if s is not None)}
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


# --- metric versus r -----------------------------------------------------------------------------

def _by_r(members: list[dict]) -> dict[float, list[dict]]:
    """The runs of one r group (its members: :func:`sga_core.results.r_group_members`) by
    r, one per seed and configuration."""
    out: dict[float, list[dict]] = {}
    for g in groups([m for m in members if m.get("r") is not None]):
        out.setdefault(float(g["r"]), []).extend(g["runs"])
    return dict(sorted(out.items()))


def r_bands(members: list[dict], kind: str = "qa", labels: list[str] | None = None) -> dict:
    """Metric versus r with the spread across seeds, over the rows of one r group:
    ``r`` (sorted), per column label (``labels``, default the catalog's) a list of
    :class:`Interval` (one per r), and ``points`` per column: (r, value, seed) of every run,
    for drawing the seeds themselves."""
    by_r = _by_r(members)
    out: dict = {"r": list(by_r), "points": {}}
    for c in labels or column_labels(members, kind):
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


def suggest_r(members: list[dict], label: str, kind: str = "qa") -> dict | None:
    """The best r of an r group (its rows) by one metric (its catalog direction), with the
    uncertainty: ``best`` (r and its :class:`Interval`), ``others``: for each other r the
    difference to the best (paired by seed where possible) and whether its interval excludes
    0, and ``n_min`` (the fewest seeds at any r). None when no r has the metric."""
    spec = next((c for c in table_columns(kind, PROTOCOL_NAMES) if c.label == label), None)
    if spec is None:
        return None
    by_r = _by_r(members)
    ivs = {r: t_interval([m.get(label) for m in runs]) for r, runs in by_r.items()}
    ivs = {r: iv for r, iv in ivs.items() if iv.mean is not None}
    if not ivs:
        return None
    best = None
    for r, iv in ivs.items():
        if best is None or _better(spec.direction, iv.mean, ivs[best].mean):
            best = r
    best_vals = _seed_values(by_r[best], label)
    others = []
    for r, iv in ivs.items():
        if r == best:
            continue
        diff = compare_by_seed(_seed_values(by_r[r], label), best_vals)
        others.append({"r": r, "interval": iv, "diff": diff, "clear": diff.excludes(0.0)})
    return {"metric": label, "direction": spec.direction, "r": best, "best": ivs[best],
            "others": others, "n_min": min(iv.n for iv in ivs.values())}


def suggestion_text(s: dict | None) -> str:
    """The suggestion of the swept setting's value (``s["param"]``: r, alpha, ...; r when
    not given) in words, with how sure it is."""
    if not s:
        return "No evaluated runs with this metric yet."
    p = s.get("param") or "r"
    fmt = fmt_interval(s["best"])
    tied = [o["r"] for o in s["others"] if o["interval"].mean == s["best"].mean]
    if tied:  # equal means: no value is better, whatever the order they were read in
        rs = ", ".join(f"{r:g}" for r in sorted([s["r"], *tied]))
        head = f"No best {p} by {s['metric']}: {p} = {rs} are tied at {fmt} (n = {s['best'].n})."
    else:
        head = f"Best {s['metric']} at {p} = {s['r']:g}: {fmt} (n = {s['best'].n})."
    if s["n_min"] < 2:
        return (head + f" Some {p} values have a single run, so nothing says whether the "
                "differences are more than seed noise: repeat the sweep over seeds "
                "(Train page: repeat over seeds).")
    clear = [o for o in s["others"] if o["clear"]]
    unclear = [o for o in s["others"] if not o["clear"]]
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
