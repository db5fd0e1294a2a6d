"""The Results table: one row per evaluated run of a project, like the paper's Table 1, with
the Original and Retained rows first, readable unique run names, and the best value of each
column. The metric columns, their order and their directions come from the metric catalog
(:func:`sga_core.metrics.catalog.table_columns`). No Streamlit here; the Results page renders
what these functions return."""

from __future__ import annotations

import re
from pathlib import Path

from sga_core.metrics.catalog import sets_read, table_columns
from sga_core.metrics.utility_parts import component_label, component_sets, components, lowest
from sga_core.projects.published_eval import not_in_use, reference_labels
from sga_core.report.collapse import collapse_rows, mark_collapse
from sga_core.report.columns import LM_PREFIX, optional_column, optional_columns
from sga_core.report.settings import differing_settings, run_settings, show_setting
from sga_core.report.sweeps import swept_value
from sga_core.runs import validate
from sga_core.runs.folder import RunFolder
from sga_core.runs.listing import list_runs


def _root_of(runs: list[dict]) -> Path | None:
    """The runs folder of these listed runs (None: no run, the default folder)."""
    return Path(runs[0]["path"]).parent if runs and runs[0].get("path") else None


def _forget_file(run_dir: Path) -> Path | None:
    files = sorted(RunFolder(run_dir).data_dir.glob("forget.*"))
    return files[0] if files else None


def project_runs(project, root=None) -> list[dict]:
    """Runs trained on the same forget rows as ``project`` (so their metrics compare): the
    hashes stored at creation (project.json, each run's data/manifest.json) are compared;
    runs made before manifests existed are hashed once per file version."""
    from sga_core.data import file_rows_hash

    target = project.forget_hash
    out = []
    for r in list_runs(root):
        h = r.get("forget_hash")
        if h is None:
            f = _forget_file(Path(r["path"]))
            h = file_rows_hash(f, project.kind) if f is not None else None
        if h is not None and h == target:
            out.append(r)
    return out


def summary_of(run_dir: Path) -> dict | None:
    """A run's evaluation summary, checked; None when it has none, or when it is damaged
    (its listing says so: ``list_runs``' ``damaged``), so tables simply leave it out."""
    try:
        return RunFolder(run_dir).summary()
    except validate.Damaged:
        return None


def metric_value(summary: dict | None, name: str):
    entry = ((summary or {}).get("metrics") or {}).get(name) or {}
    return entry.get("value"), entry.get("reason")


def own_reference_value(summary: dict | None, name: str):
    """A Retained model's value of a metric computed against the retain reference, which it
    is: PrivLeak 0 (an attack's AUC against itself; each attack's PrivLeak alike) where its
    evaluation had the AUC but no reference to compare it with; None for any other
    metric."""
    if name.startswith("privleak"):  # privleak (Min-K%'s), privleak_<attack>
        attack = name[len("privleak_"):] or "min_k"
        auc = "mia_auc" if attack == "min_k" else f"mia_{attack}_auc"
        if metric_value(summary, auc)[0] is not None:
            return 0.0
    return None


#: how far from 0.5 the Retained's own Min-K% AUC may lie before the forget and holdout sets
#: count as different in kind: a model that saw neither set should not tell them apart
MIA_SET_SHIFT = 0.4


def value_note(summary: dict | None, name: str, retained: bool) -> str | None:
    """A caution on a computed value that does not mean what its column says: PrivLeak where
    the Retained model (``retained``: this run is it), which saw neither the forget nor the
    holdout texts, still tells them apart (its Min-K% AUC within :data:`MIA_SET_SHIFT` of 0
    or 1): the two sets differ in kind, and the attack measures that, not memorisation."""
    if not name.startswith("privleak"):  # each attack's PrivLeak: the same two sets
        return None
    if retained:
        ref = metric_value(summary, "mia_auc")[0]
    else:
        ref = ((summary or {}).get("reference") or {}).get("mia_auc")
    if not isinstance(ref, (int, float)) or abs(ref - 0.5) < MIA_SET_SHIFT:
        return None
    return (f"the Retained model, which saw neither set, tells the forget texts from the "
            f"holdout texts apart (its Min-K% AUC is {ref:.2f}, not about 0.5): the two sets "
            "differ in kind (length, source), so this PrivLeak measures that difference, not "
            "memorisation; it is not ranked. Use a holdout set drawn like the forget set.")


#: why a column shown on request has no value in a row whose evaluation has no such metric
NOT_COMPUTED = ("not computed by this run's evaluation: an attack it was not asked for (GradNorm "
                "needs eval.mia_gradnorm, Reference a reference model), a set it did not "
                "have, or an evaluation older than the metric (evaluate it again)")


def run_label(r: dict, refs: dict | None = None) -> str:
    """A readable name: "Original", "Retained" (``refs``: the project's
    :func:`~sga_core.projects.published_eval.reference_labels`), or the method with its r
    ("sga r=-0.8"); the run id when the method is unknown. :func:`display_names` makes them
    unique."""
    if refs and r["run_id"] in refs:  # "Original", "Retained", "... (not in use)"
        return refs[r["run_id"]]
    method = r.get("method")
    if not method:
        return r["run_id"]
    label = method
    if r.get("sweep_param") and r.get("sweep_value") is not None:  # "task-vector alpha=2"
        label += f" {r['sweep_param']}={float(r['sweep_value']):g}"
    elif r.get("r") is not None:
        label += f" r={float(r['r']):g}"
    if r.get("group") and r.get("seed") is not None:
        label += f" seed {r['seed']}"
    return label


def display_names(runs: list[dict], project=None, refs: dict | None = None
                  ) -> dict[str, str]:
    """run id -> unique readable name: the method and r, then the settings that differ
    between these runs (:func:`differing_settings`: "sga r=-0.8 · 20 steps · lr 1e-05");
    runs that would still share a name get the time of their run id
    ("sga r=-0.8 · 01:06:15"). ``refs``: the project's reference labels, when the caller
    has them already (else read here)."""
    if refs is None and project is not None:
        refs = reference_labels(project, _root_of(runs))
    refs = refs or {}
    labels = {r["run_id"]: run_label(r, refs) for r in runs}
    # the reference models (in use or not) are no settings to tell runs apart by
    settings = {r["run_id"]: run_settings(r["path"]) if r.get("path") else {} for r in runs
                if r["run_id"] not in refs}
    methods = {r["run_id"]: r.get("method") for r in runs}
    # a run of a seed group already says its seed (run_label)
    seeded = {r["run_id"] for r in runs if r.get("group") and r.get("seed") is not None}
    for run_id, keys in differing_settings(settings, methods).items():
        keys = [k for k in keys if not (k == "seed" and run_id in seeded)]
        if keys:
            labels[run_id] += " · " + " · ".join(show_setting(k, settings[run_id][k])
                                                 for k in keys)
    counts: dict[str, int] = {}
    for v in labels.values():
        counts[v] = counts.get(v, 0) + 1
    out = {}
    for run_id, label in labels.items():
        if counts[label] > 1:
            m = re.search(r"-(\d{8})-(\d{2})(\d{2})(\d{2})(?:-\d+)?$", run_id)
            label += f" · {m.group(2)}:{m.group(3)}:{m.group(4)}" if m else f" · {run_id}"
        out[run_id] = label
    return out


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


def results_table(project, root=None, kind: str = "qa") -> list[dict]:
    """One dict per evaluated run: label, method, r, K, sweep, state and each metric; the
    Original and Retained rows first. A metric that could not be computed is None, and
    its reason is kept under ``<column> (why)``; one computed on a row subset
    (``eval.max_rows``) says so under ``<column> (rows)`` ("3 of 10 rows"); one that does
    not mean what its column says carries :func:`value_note` under ``<column> (note)``."""
    rows, counts = [], {}
    runs = project_runs(project, root)
    refs = reference_labels(project, _root_of(runs))
    names = display_names(runs, project, refs)
    # the reference models the project does not use now (Prepare's, where it takes a
    # published one; a published one it no longer names) are no rows
    skip = not_in_use(refs)
    runs = [r for r in runs if r["run_id"] not in skip]
    for r in runs:
        summ = summary_of(r["path"])
        if summ is None:
            continue
        protocol = (summ.get("protocol") or {}).get("name") or "demo"
        row = {"run": names[r["run_id"]], "run_id": r["run_id"],
               "method": r["method"] if r["method"] != "finetune" else "-",
               "r": r["r"], "K": r["k"], "sweep": r["sweep"], "state": r["state"],
               "sweep_param": r.get("sweep_param"), "sweep_value": r.get("sweep_value"),
               "protocol": protocol, "settings": run_settings(r["path"]),
               "rows_evaluated": rows_evaluated(summ)}
        # the columns of the protocol this run was evaluated under, then its extra lm-eval
        # tasks (lm_<task>: one column each)
        extra = [_Column(n) for n in (summ.get("metrics") or {}) if n.startswith(LM_PREFIX)]
        row["lm_columns"] = [c.label for c in extra]
        # the metrics shown on request (each attack's AUC and PrivLeak, prob_mean)
        shown = [c for n in (summ.get("metrics") or {})
                 if (c := optional_column(n, kind, [protocol]))]
        row["optional_metrics"] = [c.name for c in shown]
        for col in table_columns(kind, [protocol]) + extra + shown:
            value, reason = metric_value(summ, col.name)
            if value is None and row["run"] == "Retained":
                value = own_reference_value(summ, col.name)
            row[col.label] = value
            if value is None and reason:
                row[f"{col.label} (why)"] = reason
            elif value is not None and (note := value_note(summ, col.name,
                                                           row["run"] == "Retained")):
                row[f"{col.label} (note)"] = note  # a value that does not mean what it says
            elif value is not None and (subset := metric_rows(summ, col.name, kind)):
                row[f"{col.label} (rows)"] = subset  # "3 of 10 rows" (eval.max_rows)
        row.update(run_fields(r, summ))  # seed, group, MU's components
        rows.append(row)
        counts[r["run_id"]] = collapse_rows(summ, kind)  # rows behind the collapse rule
    # a column some row shows on request is "—" in a row whose evaluation did not compute
    # it: the row says why, as a computed "—" does (the page counts and lists them)
    for col in optional_columns(rows, kind):
        for row in rows:
            if row.get(col.label) is None and f"{col.label} (why)" not in row:
                row[f"{col.label} (why)"] = NOT_COMPUTED
    order = {"Original": 0, "Retained": 1}
    rows.sort(key=lambda x: (order.get(x["run"], 2), x.get("sweep") or "",
                             swept_value(x) if swept_value(x) is not None else 0,
                             x["run_id"]))
    return mark_collapse(rows, kind, counts)


class _Column:
    """An extra lm-eval task's column (``lm_<task>``): label = the task's name."""

    def __init__(self, name: str):
        self.name, self.label = name, name[len(LM_PREFIX):]


def rows_evaluated(summ: dict) -> str | None:
    """"forget: 20 of 119 rows, holdout: 20 of 119 rows" for the sets an evaluation took a
    subset of (``eval.max_rows``: summary ``rows_of``); None when it took every row."""
    of = summ.get("rows_of") or {}
    rows = summ.get("rows") or {}
    parts = [f"{name}: {rows.get(name, '?')} of {total} rows" for name, total in of.items()]
    return ", ".join(parts) or None


def metric_rows(summ: dict, name: str, kind: str) -> str | None:
    """"6 of 20 rows" for a metric computed on sets of which an evaluation took a subset
    (``eval.max_rows``): the rows it was computed on and the rows of those sets in all (PrivLeak:
    forget and holdout; Model Utility: retain and the utility sets); None when it read every
    row of them, or no set."""
    of = summ.get("rows_of") or {}
    rows = summ.get("rows") or {}
    try:
        sets = [s for s in sets_read(name, kind, component_sets(summ)) if s in rows]
    except KeyError:  # a metric the catalog no longer has
        return None
    if not any(s in of for s in sets):
        return None
    return f"{sum(rows[s] for s in sets)} of {sum(of.get(s, rows[s]) for s in sets)} rows"


def protocol_note(rows: list[dict]) -> str | None:
    """What the Results table's numbers were evaluated under: each protocol's one line (the
    demo's says its settings are its own, not comparable with published tables), and the
    row subsets evaluations took (``eval.max_rows``: "n of N rows"; the intervals are over
    those n rows)."""
    from sga_core.protocols import get_protocol

    names = sorted({r.get("protocol") or "demo" for r in rows})
    if not names:
        return None
    note = " · ".join(get_protocol(n).describe() for n in names)
    subsets: dict[str, list[str]] = {}  # every row evaluated on each subset, none left out
    for r in rows:
        if r.get("rows_evaluated"):
            subsets.setdefault(r["rows_evaluated"], []).append(str(r["run"]))
    if len(subsets) == 1 and all(r.get("rows_evaluated") for r in rows):
        note += f" · evaluated on a subset: {next(iter(subsets))} (intervals over those rows)"
    elif subsets:
        note += " · evaluated on subsets: " + "; ".join(
            f"{', '.join(runs)}: {what}" for what, runs in subsets.items()) + \
            " (intervals over those rows)"
    return note
