"""Turning evaluated run folders into evidence: a table like the paper's Table 1 (one row per
run, plus the Original and Retained rows), metric-versus-r series for a sweep, config diffs.
The metric columns, their order and their directions come from the metric catalog
(:func:`table_columns`). No Streamlit here; the Results page renders what these functions
return."""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

from sga_core import comparison
from sga_core.comparison import column_labels, extra_columns, row_columns, run_fields
from sga_core.metrics.catalog import (
    HIGHER,
    LOWER,
    ZERO,
    spec_of,
    table_columns,
)
from sga_core.runs import validate
from sga_core.runs.folder import list_runs, manifest, probes, runs_root
from sga_core.runs.prepared_ids import original_id, reference_id
from sga_core.words import plural


def _forget_file(run_dir: Path) -> Path | None:
    files = sorted((run_dir / "data").glob("forget.*"))
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
        return validate.summary(run_dir)
    except validate.Damaged:
        return None


def metric_value(summary: dict | None, name: str):
    entry = ((summary or {}).get("metrics") or {}).get(name) or {}
    return entry.get("value"), entry.get("reason")


def run_label(r: dict, project=None) -> str:
    """A readable name: "Original", "Retained", or the method with its r ("sga r=-0.8");
    the run id when the method is unknown. :func:`display_names` makes them unique."""
    if project is not None and r["run_id"] == original_id(project.name):
        return "Original"
    if project is not None and r["run_id"] == reference_id(project.name):
        return "Retained"
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


def display_names(runs: list[dict], project=None) -> dict[str, str]:
    """run id -> unique readable name: the method and r, then the settings that differ
    between these runs (:func:`differing_settings`: "sga r=-0.8 · 20 steps · lr 1e-05");
    runs that would still share a name get the time of their run id
    ("sga r=-0.8 · 01:06:15")."""
    labels = {r["run_id"]: run_label(r, project) for r in runs}
    settings = {r["run_id"]: run_settings(r["path"]) if r.get("path") else {} for r in runs
                if labels[r["run_id"]] not in REFERENCE_ROWS}
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


def results_table(project, root=None, kind: str = "qa") -> list[dict]:
    """One dict per evaluated run: label, method, r, K, sweep, state and each metric; the
    Original and Retained rows first. A metric that could not be computed is None, and
    its reason is kept under ``<column> (why)``."""
    rows = []
    runs = project_runs(project, root)
    names = display_names(runs, project)
    for r in runs:
        summ = summary_of(r["path"])
        if summ is None:
            continue
        protocol = (summ.get("protocol") or {}).get("name") or "demo"
        row = {"run": names[r["run_id"]], "run_id": r["run_id"],
               "method": r["method"] if r["method"] != "finetune" else "-",
               "r": r["r"], "K": r["k"], "sweep": r["sweep"], "state": r["state"],
               "sweep_param": r.get("sweep_param"), "sweep_value": r.get("sweep_value"),
               "protocol": protocol, "settings": run_settings(r["path"])}
        # the columns of the protocol this run was evaluated under, then its extra lm-eval
        # tasks (lm_<task>: one column each)
        extra = [_Column(n) for n in (summ.get("metrics") or {}) if n.startswith(LM_PREFIX)]
        row["lm_columns"] = [c.label for c in extra]
        for col in table_columns(kind, [protocol]) + extra:
            value, reason = metric_value(summ, col.name)
            row[col.label] = value
            if value is None and reason:
                row[f"{col.label} (why)"] = reason
        row.update(run_fields(r, summ))  # seed, group, MU's components (sga_core.comparison)
        rows.append(row)
    order = {"Original": 0, "Retained": 1}
    rows.sort(key=lambda x: (order.get(x["run"], 2), x.get("sweep") or "",
                             _swept_value(x) if _swept_value(x) is not None else 0,
                             x["run_id"]))
    return mark_collapse(rows, kind)


class _Column:
    """An extra lm-eval task's column (``lm_<task>``): label = the task's name."""

    def __init__(self, name: str):
        self.name, self.label = name, name[len(LM_PREFIX):]


LM_PREFIX = "lm_"


def best_values(rows: list[dict], kind: str = "qa") -> dict[str, float]:
    """The best value of each column (by label) among the unlearning runs that did not
    collapse (Original, Retained and runs :func:`mark_collapse` flagged excluded), following
    the column's direction: the highest, the lowest, or the closest to 0. A column has a
    best only where at least two such values differ: one run, or equal values, is no
    comparison (every cell of a single run was marked best)."""
    runs = [r for r in rows if r["run"] not in REFERENCE_ROWS and r.get("collapsed") is not True]
    pick = {HIGHER: max, LOWER: min, ZERO: lambda vals: min(vals, key=abs)}
    best = {}
    for col in row_columns(rows, kind):
        vals = [r[col.label] for r in runs if r.get(col.label) is not None]
        if len(set(vals)) >= 2:
            best[col.label] = pick[col.direction](vals)
    return best


def _swept_value(row: dict):
    """The value of the setting a row's method sweeps (``sweep_value``; rows made without it:
    r)."""
    return row["sweep_value"] if row.get("sweep_value") is not None else row.get("r")


def r_group_members(rows: list[dict]) -> dict[str, list[dict]]:
    """What a metric-versus-r plot can show, name -> its rows: each sweep, and all runs of a
    method, with two or more values of the method's sweep setting (SGA: r; Task Vector,
    WHP: alpha), split so that the runs of one group differ in that value only (every other
    setting of :func:`run_settings` but the seed matches: steps, learning rate, ...; the
    seeds of a configuration are its replicates). Each member's ``r`` is its swept value
    (the x of the plot; :func:`sweep_param_of` names the setting).
    A split group is named by its settings ("all sga runs · 20 steps")."""
    runs = [{**r, "r": _swept_value(r), "sweep_param": r.get("sweep_param") or "r"}
            for r in rows if _swept_value(r) is not None and r["run"] not in REFERENCE_ROWS]
    out: dict[str, list[dict]] = {}

    def add(name: str, members: list[dict]) -> None:
        parts: dict[str, list[dict]] = {}
        for r in members:
            parts.setdefault(_signature(_configuration(r)), []).append(r)
        parts = {k: v for k, v in parts.items() if len({r["r"] for r in v}) >= 2}
        differ = differing_settings({k: _configuration(v[0]) for k, v in parts.items()})
        for key, part in parts.items():
            words = [show_setting(k, part[0]["settings"][k]) for k in differ.get(key, [])]
            out[" · ".join([name, *words]) if len(parts) > 1 else name] = part

    for sweep in sorted({r["sweep"] for r in runs if r.get("sweep")}):
        add(sweep, [r for r in runs if r.get("sweep") == sweep])
    for method in sorted({r["method"] for r in runs}):
        add(f"all {method} runs", [r for r in runs if r["method"] == method])
    return out


def _configuration(row: dict) -> dict:
    """A row's settings but its seed: seeds are replicates of one configuration, not a
    setting that sets runs apart."""
    return {k: v for k, v in (row.get("settings") or {}).items() if k != "seed"}


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


def r_bands(rows: list[dict], sweep: str, kind: str = "qa") -> dict:
    """:func:`sga_core.comparison.r_bands` of one :func:`r_groups` entry: each metric's mean
    and 95% interval over seeds per r, with every seed's point."""
    labels = column_labels(rows, kind)
    return comparison.r_bands(r_group_members(rows).get(sweep, []), kind, labels)


def suggest_r(rows: list[dict], sweep: str, label: str, kind: str = "qa") -> dict | None:
    """:func:`sga_core.comparison.suggest_r` of one :func:`r_groups` entry, with the name of
    the setting it suggests a value of (``param``)."""
    s = comparison.suggest_r(r_group_members(rows).get(sweep, []), label, kind)
    if s is not None:
        s["param"] = sweep_param_of(rows, sweep)
    return s


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


# --- reading a run's settings, and what makes the table hard to misread ----------------------

REFERENCE_ROWS = ("Original", "Retained")
#: training settings that shape the unlearned model (logging, probes and saving do not)
MODEL_SETTINGS = ("lr", "batch_size", "grad_accum", "seed", "weight_decay", "warmup_steps",
                  "scheduler", "max_grad_norm", "max_length", "group_by_length",
                  "system_prompt", "dtype")
_SHOW = {"lr": "lr {:g}", "seed": "seed {}", "batch_size": "batch {}", "k": "K={}",
         "grad_accum": "grad accum {}", "model": "model {}", "normals": "normals {}"}


def run_settings(run_dir) -> dict:
    """The settings that make a run's results what they are, read from its config.yaml:
    the method's own (except its sweep setting, r for SGA), the length ("20 steps" or
    "3 epochs"), each of ``MODEL_SETTINGS``, the model (its run's name when it is a run's
    model) and the normal answers (their file's name). {} when the config cannot be read."""
    try:
        st = os.stat(Path(run_dir) / "config.yaml")
    except OSError:
        return {}
    return dict(_run_settings(str(run_dir), st.st_mtime_ns))


@functools.lru_cache(maxsize=1024)
def _run_settings(run_dir: str, mtime_ns: int) -> tuple:
    from sga_core.methods import REGISTRY

    try:
        cfg = validate.config(run_dir)
    except validate.Damaged:
        return ()
    method = REGISTRY.get(cfg.get("method") or "")
    sweep = getattr(method, "sweep_param", None) or "r"
    out = {k: v for k, v in sorted((cfg.get("method_args") or {}).items()) if k != sweep}
    t = cfg.get("training") if isinstance(cfg.get("training"), dict) else {}
    steps = t.get("max_steps") or 0
    out["length"] = plural(steps, "step") if steps else f"{t.get('epochs', 3):g} epochs"
    out.update({k: t[k] for k in MODEL_SETTINGS if k in t})
    model = str(cfg.get("model") or "")
    out["model"] = Path(model).parent.name if Path(model).name == "model" else model
    normals = (manifest(run_dir).get("normals") or {}).get("source")
    if normals:
        out["normals"] = Path(normals).name
    return tuple((k, v if isinstance(v, (str, int, float, bool, type(None))) else str(v))
                 for k, v in out.items())


def _signature(settings: dict) -> str:
    return json.dumps(settings, sort_keys=True, default=str)


def differing_settings(settings: dict[str, dict], methods: dict[str, str] | None = None
                       ) -> dict[str, list[str]]:
    """key -> the names of the settings whose values differ between the entries of
    ``settings`` (a run missing a setting counts as a different value), in a fixed order;
    with ``methods`` (key -> method), a method's own settings count only between runs of the
    same method (an SGA run's K is no news next to a GA run)."""
    if len(settings) < 2:
        return dict.fromkeys(settings, [])
    names = list(dict.fromkeys(k for s in settings.values() for k in s))
    common = {"length", *MODEL_SETTINGS, "model", "normals"}
    out: dict[str, list[str]] = {}
    for key, s in settings.items():
        peers = [o for k, o in settings.items()
                 if methods is None or methods.get(k) == methods.get(key)]
        keys = []
        for name in names:
            group = settings.values() if name in common or methods is None else peers
            if name in s and len({_signature({"v": o.get(name)}) for o in group}) > 1:
                keys.append(name)
        out[key] = keys
    return out


def show_setting(name: str, value) -> str:
    """A setting as a short label part: "20 steps", "lr 1e-05", "seed 1", "K=4"."""
    if name == "length":
        return str(value)
    if name in _SHOW and value is not None:
        try:
            return _SHOW[name].format(value)
        except (TypeError, ValueError):
            pass
    if isinstance(value, bool):
        return name.replace("_", " ") if value else f"no {name.replace('_', ' ')}"
    return f"{name.replace('_', ' ')} {value}"


#: A run is *collapsed* when a retain metric falls far below the Original's: the model was
#: destroyed rather than made to forget, and its forget metrics (near-zero probability and
#: ROUGE-L) would otherwise look like the best unlearning. (metric, "below"/"above", factor)
COLLAPSE_RULES = {
    "qa": (("retain_probability", "below", 0.1), ("retain_rouge", "below", 0.5)),
    "text": (("retain_knowmem", "below", 0.5), ("holdout_perplexity", "above", 10.0)),
}
_WHY = {0.1: "a tenth of", 0.5: "half of", 10.0: "10 times"}


def collapse_rule(kind: str = "qa") -> str:
    """The collapse rule of ``kind`` in words, with its reason."""
    parts = [f"{spec_of(name, kind).label} {side} {_WHY.get(f, f'{f:g} x')} the Original's"
             for name, side, f in COLLAPSE_RULES[kind]]
    why = ("retain answers 10 times less likely (+2.3 nats per token) or half of their words "
           "gone is a broken model, not forgetting" if kind == "qa" else
           "half the retain knowledge gone, or text 10 times less likely, is a broken model, "
           "not forgetting")
    return f"collapsed = {' or '.join(parts)} ({why})"


def mark_collapse(rows: list[dict], kind: str = "qa") -> list[dict]:
    """Flag each unlearning row (in place, and return the rows): ``collapsed`` is True when
    a rule of :data:`COLLAPSE_RULES` holds against the Original row, False when none does,
    None when it cannot be judged (no evaluated Original, or the values are missing);
    ``collapsed (why)`` says which values decided it."""
    original = next((r for r in rows if r["run"] == "Original"), None)
    for row in rows:
        if row["run"] in REFERENCE_ROWS:
            continue
        hits, checked = [], []
        for name, side, factor in COLLAPSE_RULES[kind]:
            label = spec_of(name, kind).label
            own, base = row.get(label), (original or {}).get(label)
            if own is None or base is None:
                continue
            limit = base * factor
            bad = own < limit if side == "below" else own > limit
            text = (f"{label} {own:.3g} {'<' if side == 'below' else '>'} {limit:.3g} "
                    f"({_WHY.get(factor, factor)} the Original's {base:.3g})")
            (hits if bad else checked).append(text if bad else
                                              f"{label} {own:.3g} vs the Original's {base:.3g}")
        if hits:
            row["collapsed"], row["collapsed (why)"] = True, "; ".join(hits)
        elif checked:
            row["collapsed"], row["collapsed (why)"] = False, "kept: " + "; ".join(checked)
        else:
            row["collapsed"] = None
            row["collapsed (why)"] = ("no evaluated Original to compare with" if original is
                                      None else "its retain metrics are missing")
    return rows


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in (d or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _data_facts(run_dir: Path) -> dict:
    """What a run's data snapshot was made from (data/manifest.json): per file its source,
    row count and content hash. config.yaml names the snapshot (``data/normals.jsonl`` in
    every run), so two runs with different normal answers would look the same without it."""
    out = {}
    for name, entry in manifest(run_dir).items():
        if isinstance(entry, dict):
            out[f"data.{name} source"] = entry.get("source")
            out[f"data.{name} rows"] = entry.get("rows")
            out[f"data.{name} content"] = (entry.get("rows_hash") or "")[:12] or None
    return out


def config_diff(run_a: Path, run_b: Path) -> list[dict]:
    """The settings that differ between two runs (flattened keys), the data they were
    trained on included (:func:`_data_facts`). A damaged config raises
    :class:`sga_core.runs.validate.Damaged`."""
    a, b = _flatten(validate.config(run_a)), _flatten(validate.config(run_b))
    a, b = {**a, **_data_facts(run_a)}, {**b, **_data_facts(run_b)}
    skip = {"run_id"}
    return [{"setting": k, Path(run_a).name: a.get(k), Path(run_b).name: b.get(k)}
            for k in sorted(set(a) | set(b)) if k not in skip and a.get(k) != b.get(k)]


def token_table(run_dir: Path, set_name: str = "forget") -> dict[int, dict]:
    """``eval/tokens.jsonl`` of a run: per row index, its token probabilities
    (:class:`sga_core.runs.validate.Damaged` when the file is damaged)."""
    return {r["index"]: r for r in validate.tokens(run_dir) if r.get("set") == set_name}


def per_sample(run_dir: Path) -> list[dict]:
    """``eval/per_sample.jsonl``, checked (every evaluated row there, or Damaged)."""
    return validate.per_sample(run_dir)


def word_token_index(tokens: list[str], word: str) -> int | None:
    """Index of the token where ``word`` starts in the decoded answer (works when a word is
    split into several tokens), or None."""
    text, starts = "", []
    for tok in tokens:
        starts.append(len(text))
        text += tok
    at = text.find(word)
    if at < 0:
        return None
    return max(i for i, s in enumerate(starts) if s <= at)


def follow_token(run_dir: Path, forget_index: int, position: int) -> list[tuple[int, float]]:
    """(step, probability) of the answer token at ``position`` across a run's probes."""
    pts = []
    for rec in probes(run_dir):
        if rec.get("forget_index") == forget_index and position < len(rec.get("probs", [])):
            pts.append((rec["step"], rec["probs"][position]))
    return pts


__all__ = ["COLLAPSE_RULES", "best_values", "collapse_rule", "config_diff", "differing_settings",
           "display_names", "extra_columns", "follow_token", "mark_collapse", "per_sample",
           "project_runs", "r_bands", "r_group_members", "r_groups", "results_table",
           "row_columns", "run_label", "run_settings", "runs_root", "show_setting", "suggest_r",
           "summary_of", "sweep_param_of", "sweep_series", "table_columns", "token_table"]
