"""Turning evaluated run folders into evidence: a table like the paper's Table 1 (one row per
run, plus the Original and Retained rows), metric-versus-r series for a sweep, config diffs.
The metric columns, their order and their directions come from the metric catalog
(:func:`table_columns`). No Streamlit here; the Results page renders what these functions
return."""

from __future__ import annotations

import re
from pathlib import Path

from sga_core.comparison import run_fields
from sga_core.fileio import read_json, read_jsonl
from sga_core.metrics.catalog import HIGHER, LOWER, ZERO, table_columns
from sga_core.runs.folder import list_runs, runs_root


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
    return read_json(Path(run_dir) / "eval" / "summary.json", default=None)


def metric_value(summary: dict | None, name: str):
    entry = ((summary or {}).get("metrics") or {}).get(name) or {}
    return entry.get("value"), entry.get("reason")


def run_label(r: dict, project=None) -> str:
    """A readable name: "Original", "Retained", or the method with its r ("sga r=-0.8");
    the run id when the method is unknown. :func:`display_names` makes them unique."""
    if project is not None and r["run_id"] == f"{project.name}-original":
        return "Original"
    if project is not None and r["run_id"] == f"{project.name}-retain-ref":
        return "Retained"
    method = r.get("method")
    if not method:
        return r["run_id"]
    label = method
    if r.get("r") is not None:
        label += f" r={float(r['r']):g}"
    if r.get("group") and r.get("seed") is not None:
        label += f" seed {r['seed']}"
    return label


def display_names(runs: list[dict], project=None) -> dict[str, str]:
    """run id -> unique readable name; runs that would share a name get the time of their
    run id ("sga r=-0.8 · 01:06:15")."""
    labels = {r["run_id"]: run_label(r, project) for r in runs}
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
    columns = table_columns(kind)
    rows = []
    runs = project_runs(project, root)
    names = display_names(runs, project)
    for r in runs:
        summ = summary_of(r["path"])
        if summ is None:
            continue
        row = {"run": names[r["run_id"]], "run_id": r["run_id"],
               "method": r["method"] if r["method"] != "finetune" else "-",
               "r": r["r"], "K": r["k"], "sweep": r["sweep"], "state": r["state"]}
        for col in columns:
            value, reason = metric_value(summ, col.name)
            row[col.label] = value
            if value is None and reason:
                row[f"{col.label} (why)"] = reason
        row.update(run_fields(r, summ))  # seed, group, MU's components (sga_core.comparison)
        rows.append(row)
    order = {"Original": 0, "Retained": 1}
    rows.sort(key=lambda x: (order.get(x["run"], 2), x.get("sweep") or "",
                             x["r"] if x["r"] is not None else 0, x["run_id"]))
    return rows


def best_values(rows: list[dict], kind: str = "qa") -> dict[str, float]:
    """The best value of each column (by label) among the unlearning runs (Original and
    Retained excluded), following the column's direction: the highest, the lowest, or the
    closest to 0."""
    runs = [r for r in rows if r["run"] not in ("Original", "Retained")]
    pick = {HIGHER: max, LOWER: min, ZERO: lambda vals: min(vals, key=abs)}
    best = {}
    for col in table_columns(kind):
        vals = [r[col.label] for r in runs if r.get(col.label) is not None]
        if vals:
            best[col.label] = pick[col.direction](vals)
    return best


def r_groups(rows: list[dict]) -> list[str]:
    """What a metric-versus-r plot can show: each sweep, and every unlearning method with
    runs at two or more r values (runs launched one by one, not as a sweep)."""
    out = sorted({r["sweep"] for r in rows if r.get("sweep")})
    methods = sorted({r["method"] for r in rows if r.get("r") is not None})
    for m in methods:
        if len({r["r"] for r in rows if r["method"] == m and r.get("r") is not None}) >= 2:
            out.append(f"all {m} runs")
    return out


def sweep_series(rows: list[dict], sweep: str, kind: str = "qa") -> dict[str, list]:
    """Metric-versus-r points of one :func:`r_groups` entry (a sweep, or ``all <method>
    runs``), sorted by r."""
    labels = [c.label for c in table_columns(kind)]
    if sweep.startswith("all ") and sweep.endswith(" runs"):
        method = sweep[4:-5]
        chosen = [r for r in rows if r["method"] == method]
    else:
        chosen = [r for r in rows if r.get("sweep") == sweep]
    pts = sorted((r for r in chosen if r.get("r") is not None), key=lambda r: r["r"])
    return {"r": [p["r"] for p in pts], **{c: [p.get(c) for p in pts] for c in labels}}


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in (d or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def config_diff(run_a: Path, run_b: Path) -> list[dict]:
    """The settings that differ between two runs (flattened keys)."""
    import yaml

    a = _flatten(yaml.safe_load((Path(run_a) / "config.yaml").read_text()) or {})
    b = _flatten(yaml.safe_load((Path(run_b) / "config.yaml").read_text()) or {})
    skip = {"run_id"}
    return [{"setting": k, Path(run_a).name: a.get(k), Path(run_b).name: b.get(k)}
            for k in sorted(set(a) | set(b)) if k not in skip and a.get(k) != b.get(k)]


def token_table(run_dir: Path, set_name: str = "forget") -> dict[int, dict]:
    """``eval/tokens.jsonl`` of a run: per row index, its token probabilities."""
    return {r["index"]: r for r in read_jsonl(Path(run_dir) / "eval" / "tokens.jsonl")
            if r.get("set") == set_name}


def per_sample(run_dir: Path) -> list[dict]:
    return read_jsonl(Path(run_dir) / "eval" / "per_sample.jsonl")


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
    for rec in read_jsonl(Path(run_dir) / "probes.jsonl"):
        if rec.get("forget_index") == forget_index and position < len(rec.get("probs", [])):
            pts.append((rec["step"], rec["probs"][position]))
    return pts


__all__ = ["best_values", "config_diff", "display_names", "follow_token", "per_sample",
           "project_runs", "r_groups", "results_table", "run_label", "runs_root", "summary_of",
           "sweep_series", "table_columns", "token_table"]
