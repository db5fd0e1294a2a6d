"""The uncertainty of one run, and of a difference between two runs, from their evaluation:

- bootstrap intervals over rows for the metrics that are means of per-row values (ROUGE,
  probability, truth-ratio score; VerbMem and KnowMem on text data), read from
  ``eval/per_sample.jsonl``: how much the value depends on which rows were asked;
- Forget Quality's resolution: the p-values its KS test can take for n forget rows, so 0.40
  and 0.58 read as neighbouring steps, not a large difference;
- two runs on the same rows: a paired bootstrap interval of each metric's difference;
- the columns that are not a mean of rows (MIA AUC, PrivLeak, perplexity, Model Utility):
  recomputed on each resample of the rows (:mod:`sga_core.report.row_stats`), so every
  Results column with per-row inputs has an interval.

Each per-row value is the one the catalog's aggregate averages, so the mean here is the
summary's value (``tests/unit/report/test_run_uncertainty.py`` checks it). No torch; scipy
only for the KS steps.
"""

from __future__ import annotations

import math
from pathlib import Path

from sga_core.metrics.catalog import metrics_for
from sga_core.report.row_stats import groups_of, statistics
from sga_core.report.stats import (
    bootstrap_mean,
    bootstrap_statistic,
    clean,
    fq_neighbours,
    ks_pvalue_steps,
    paired_bootstrap_diff,
    paired_bootstrap_statistic,
)
from sga_core.runs.folder import RunFolder


def _tr_score(tr, forget: bool):
    """A raw truth ratio as the per-row term of its set's score (docs/spec.md#42-truth-ratio)."""
    if not isinstance(tr, (int, float)) or isinstance(tr, bool) or math.isnan(tr):
        return None
    if forget:
        return 0.0 if tr <= 0 or math.isinf(tr) else min(tr, 1.0 / tr)
    return max(0.0, 1.0 - tr)


QA_KEYS = {"probability": "probability", "truth_ratio": "truth_ratio",
           "rouge_l_recall": "rouge"}  # per_sample.jsonl key -> metric suffix
# per-row means of either kind: per_sample.jsonl key -> metric suffix
MEAN_KEYS = {"extraction_strength": "extraction_strength",
             "exact_memorization": "exact_memorization"}


def _qa_metric(set_name: str, key: str) -> str:
    return f"{set_name}_{QA_KEYS[key]}"


def _text_metric(set_name: str) -> str:
    return {"forget": "forget_verbmem", "forget_qa": "forget_knowmem",
            "retain_qa": "retain_knowmem"}.get(set_name, f"{set_name}_knowmem")


def row_values(records: list[dict]) -> dict[str, dict[int, float | None]]:
    """Per metric name (a summary key), each row's value by row index: the terms whose mean
    is the metric."""
    out: dict[str, dict[int, float | None]] = {}
    for rec in records:
        s, i = rec.get("set"), rec.get("index")
        if s is None or i is None:
            continue
        for key in QA_KEYS:
            if key in rec and rec[key] is not None:
                v = _tr_score(rec[key], s == "forget") if key == "truth_ratio" else rec[key]
                out.setdefault(_qa_metric(s, key), {})[i] = v
        if rec.get("rouge_l_f1") is not None:
            out.setdefault(_text_metric(s), {})[i] = rec["rouge_l_f1"]
        if rec.get("rouge_l_recall") is not None:  # the copyright task's completions
            out.setdefault(f"{s}_completion_rouge", {})[i] = rec["rouge_l_recall"]
        for key, suffix in MEAN_KEYS.items():
            if rec.get(key) is not None:
                out.setdefault(f"{s}_{suffix}", {})[i] = rec[key]
    return out


def _labels(kind: str) -> dict[str, str]:
    out = {}
    for spec in metrics_for(kind):
        out[spec.name] = spec.label
    return out


def _label(name: str, kind: str) -> str:
    labels = _labels(kind)
    if name in labels:
        return labels[name]
    for m in ("probability", "truth_ratio", "rouge", "knowmem", "perplexity"):
        if name.endswith("_" + m):
            return labels.get("{set}_" + m, name).format(set=name[:-len(m) - 1])
    return name


def run_intervals(run_dir, n_boot: int = 2000) -> list[dict]:
    """One dict per per-row metric of a run's evaluation: ``metric``, ``label``, ``value``
    (the mean over rows), ``lo``/``hi`` (95% percentile bootstrap over rows), ``n`` rows,
    and the ``summary`` value it reproduces. [] when the run has no evaluation; a damaged
    summary or per-row file (rows missing: the intervals would be over fewer rows than the
    value) raises :class:`sga_core.runs.validate.Damaged` naming it."""
    run_dir = Path(run_dir)
    summary = RunFolder(run_dir).summary() or {}
    records = RunFolder(run_dir).per_sample()
    kind = summary.get("task", "qa")
    metrics = summary.get("metrics") or {}
    out = []
    for name, by_row in row_values(records).items():
        if name not in metrics:
            continue
        iv = bootstrap_mean(list(by_row.values()), n_boot=n_boot)
        if iv.mean is None:
            continue
        out.append({"metric": name, "label": _label(name, kind), "value": iv.mean,
                    "lo": iv.lo, "hi": iv.hi, "n": iv.n,
                    "summary": (metrics.get(name) or {}).get("value")})
    for stat in statistics(summary):
        groups = [list(g.values()) for g in groups_of(records, stat)]
        iv = bootstrap_statistic(groups, stat.stat, n_boot=n_boot)
        if iv.mean is None:
            continue
        out.append({"metric": stat.name, "label": _label(stat.name, kind), "value": iv.mean,
                    "lo": iv.lo, "hi": iv.hi, "n": iv.n,
                    "summary": (metrics.get(stat.name) or {}).get("value")})
    return sorted(out, key=_order)


def _order(d: dict):
    """Forget-side metrics first (PrivLeak and MIA AUC read the forget rows), then by name."""
    return (not (d["metric"].startswith("forget") or d["metric"] in ("privleak", "mia_auc")),
            d["metric"])


def fq_resolution(summary: dict | None) -> dict | None:
    """Forget Quality's resolution for a summary: ``n`` (this model's forget truth ratios),
    ``m`` (the reference's), ``value``, the KS ``statistic``, every ``steps`` (D, p) the
    test can give, and the observed value's ``neighbours``. None without an FQ value."""
    fq = ((summary or {}).get("metrics") or {}).get("forget_quality") or {}
    if fq.get("value") is None:
        return None
    n = len(clean(summary.get("forget_truth_ratios") or []))
    m = ((summary.get("reference") or {}).get("n_truth_ratios")) or n
    if not n:
        return None
    steps = ks_pvalue_steps(n, m)
    stat = (fq.get("per_sample") or [None])[0]
    return {"n": n, "m": m, "value": fq["value"], "statistic": stat, "steps": steps,
            "neighbours": fq_neighbours(fq["value"], steps)}


def fq_resolution_text(res: dict | None) -> str:
    if not res:
        return "no Forget Quality value"
    ps = sorted({p for _, p in res["steps"]}, reverse=True)
    near = res["neighbours"]
    digits = next((d for d in range(3, 10) if len({f"{p:.{d}g}" for p in ps}) == len(ps)), 10)
    shown = ", ".join(f"{p:.{digits}g}" for p in ps[:12]) + (" ..." if len(ps) > 12 else "")
    text = (f"FQ is a KS-test p-value over {res['n']} forget rows (reference: {res['m']}), so "
            f"it can only take {len(ps)} values: {shown}.")
    if res["statistic"] is not None:
        text += f" This run: D = {res['statistic']:.3g}, FQ = {res['value']:.3g}"
        if near["higher"] is not None or near["lower"] is not None:
            text += (" (one step up: " + (f"{near['higher']:.3g}" if near["higher"] is not None
                                          else "none") + "; one step down: " +
                     (f"{near['lower']:.3g}" if near["lower"] is not None else "none") + ")")
        text += "."
    return text


def _pairs(a: list[dict], b: list[dict]) -> tuple[dict, int, list[dict], list[dict]]:
    """Per metric, the (a, b) values of the rows both runs evaluated (same set, index and
    question); how many rows were left out because their text differs; and those rows'
    records of each run."""
    key = ("set", "index")
    qa = {(r.get(key[0]), r.get(key[1])): r for r in a}
    qb = {(r.get(key[0]), r.get(key[1])): r for r in b}
    mismatched = 0
    same = []
    for k in qa.keys() & qb.keys():
        ta, tb = _row_text(qa[k]), _row_text(qb[k])
        if ta != tb:
            mismatched += 1
        else:
            same.append(k)
    va, vb = row_values([qa[k] for k in same]), row_values([qb[k] for k in same])
    out = {}
    for name in va.keys() & vb.keys():
        rows = sorted(va[name].keys() & vb[name].keys())
        out[name] = ([va[name][i] for i in rows], [vb[name][i] for i in rows])
    return out, mismatched, [qa[k] for k in same], [qb[k] for k in same]


def _row_text(rec: dict):
    """What identifies a row's content: its question, prompt or (text sets without a
    prompt) its reference passage."""
    for key in ("question", "prompt", "reference"):
        if rec.get(key) is not None:
            return rec[key]
    return None


def _paired_statistics(ra: list[dict], rb: list[dict], sa: dict, sb: dict,
                       n_boot: int) -> dict:
    """A minus B for each non-mean metric both runs have, on the rows both scored."""
    out = {}
    stats_b = {s.name: s for s in statistics(sb)}
    for stat in statistics(sa):
        other = stats_b.get(stat.name)
        if other is None:
            continue
        ga, gb = groups_of(ra, stat), groups_of(rb, other)
        common = [sorted(x.keys() & y.keys()) for x, y in zip(ga, gb)]
        xa = [[g[i] for i in ix] for g, ix in zip(ga, common)]
        xb = [[g[i] for i in ix] for g, ix in zip(gb, common)]
        out[stat.name] = (paired_bootstrap_statistic(xa, xb, stat.stat, other.stat,
                                                     n_boot=n_boot),
                          stat.stat(xa) if all(xa) else None,
                          other.stat(xb) if all(xb) else None)
    return out


def compare_runs(run_a, run_b, n_boot: int = 2000) -> dict:
    """Each per-row metric of run A minus run B on the rows both evaluated: ``rows`` (dicts:
    metric, label, a, b, diff, lo, hi, n, clear = the interval excludes 0) and ``mismatched``
    (rows whose question differs: left out). Damaged files raise
    :class:`sga_core.runs.validate.Damaged`."""
    ra, rb = RunFolder(run_a).per_sample(), RunFolder(run_b).per_sample()
    sa, sb = RunFolder(run_a).summary() or {}, RunFolder(run_b).summary() or {}
    kind = sa.get("task", "qa")
    pairs, mismatched, same_a, same_b = _pairs(ra, rb)
    rows = []
    names = set(sa.get("metrics") or {}) | set(sb.get("metrics") or {})
    for name, (a, b) in pairs.items():
        if name not in names:
            continue
        iv = paired_bootstrap_diff(a, b, n_boot=n_boot)
        if iv.mean is None:
            continue
        ca, cb = clean(a), clean(b)
        rows.append({"metric": name, "label": _label(name, kind),
                     "a": sum(ca) / len(ca) if ca else None,
                     "b": sum(cb) / len(cb) if cb else None,
                     "diff": iv.mean, "lo": iv.lo, "hi": iv.hi, "n": iv.n,
                     "clear": iv.excludes(0.0)})
    for name, (iv, a, b) in _paired_statistics(same_a, same_b, sa, sb, n_boot).items():
        if iv.mean is None:
            continue
        rows.append({"metric": name, "label": _label(name, kind), "a": a, "b": b,
                     "diff": iv.mean, "lo": iv.lo, "hi": iv.hi, "n": iv.n,
                     "clear": iv.excludes(0.0)})
    rows.sort(key=_order)
    return {"rows": rows, "mismatched": mismatched}
