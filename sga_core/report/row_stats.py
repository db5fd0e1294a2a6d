"""The Results columns that are not a mean of per-row values, recomputed from the rows of
``eval/per_sample.jsonl`` so that they get bootstrap intervals too
(docs/spec.md#57-seeds-and-groups):

- **MIA AUC** and **PrivLeak**: the Min-K% scores of the forget rows (members) against the
  holdout rows (non-members); each group is resampled on its own. PrivLeak keeps the
  reference's AUC fixed (the one the summary's value was computed against);
- **perplexity** of a text set: ``exp`` of the token-weighted mean NLL, from each row's own
  perplexity and its ``scored_tokens`` (evaluations written before that count existed get
  no interval for it);
- **Model Utility**: the harmonic mean of its components, each a mean over the rows of its
  set (the retain set and each utility set), every set resampled on its own.

Each entry is a :class:`Statistic`: the sets its groups come from, the per-row value it
reads, and the function of the groups; :func:`statistics` lists those a run's summary has.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from sga_core.metrics.muse import auc
from sga_core.metrics.tofu import MODEL_UTILITY_METRICS, harmonic_mean
from sga_core.metrics.utility_parts import components


@dataclass(frozen=True)
class Statistic:
    """A metric computed from groups of rows: ``sets`` (one group each), ``value(record)``
    (a row's input; None = the row is left out) and ``stat(groups)`` (None when undefined)."""

    name: str
    sets: tuple[str, ...]
    value: Callable[[dict], object]
    stat: Callable[[list[list]], float | None]


def _number(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _auc(groups: list[list]) -> float | None:
    return auc(groups[0], groups[1]).value


def privleak_reference(summary: dict) -> float | None:
    """The reference AUC a summary's PrivLeak was computed against: recovered from its own
    PrivLeak and MIA AUC (``P = (A - A_ref) / A_ref * 100`` with ``A = 1 - AUC``), else the
    reference recorded in the summary."""
    metrics = summary.get("metrics") or {}
    p = _number((metrics.get("privleak") or {}).get("value"))
    u = _number((metrics.get("mia_auc") or {}).get("value"))
    if p is not None and u is not None and p != -100.0:
        return 1.0 - (1.0 - u) / (1.0 + p / 100.0)
    given = _number((summary.get("protocol") or {}).get("retrained_auc"))
    return given if given is not None else _number((summary.get("reference") or {}).get(
        "mia_auc"))


def _privleak(ref: float) -> Callable[[list[list]], float | None]:
    def stat(groups: list[list]) -> float | None:
        a = _auc(groups)
        if a is None or ref == 1.0:
            return None
        return ((1.0 - a) - (1.0 - ref)) / (1.0 - ref) * 100.0
    return stat


def _ppl_row(rec: dict):
    ppl, n = _number(rec.get("perplexity")), rec.get("scored_tokens")
    if ppl is None or ppl <= 0 or not isinstance(n, int) or n <= 0:
        return None
    return (math.log(ppl), n)


def _perplexity(groups: list[list]) -> float | None:
    rows = groups[0]
    n = sum(c for _, c in rows)
    if not n:
        return None
    return math.exp(min(sum(nll * c for nll, c in rows) / n, 700.0))


def _tr_retain(tr) -> float | None:
    tr = _number(tr)
    return None if tr is None else max(0.0, 1.0 - tr)


def _mu_row(rec: dict):
    """One row's three MU terms (probability, ROUGE-L recall, retain-style TR score)."""
    return (_number(rec.get("probability")), _number(rec.get("rouge_l_recall")),
            _tr_retain(rec.get("truth_ratio")))


def _model_utility(groups: list[list]) -> float | None:
    comps = []
    for rows in groups:
        for m in range(len(MODEL_UTILITY_METRICS)):
            vals = [r[m] for r in rows if r[m] is not None]
            if not vals:
                return None
            comps.append(sum(vals) / len(vals))
    return harmonic_mean(comps)


def mu_sets(summary: dict) -> tuple[str, ...]:
    """The sets a summary's Model Utility was taken over, in order (from its components)."""
    out: list[str] = []
    for key in components(summary):
        for m in MODEL_UTILITY_METRICS:
            if key.endswith("_" + m) and key[:-len(m) - 1] not in out:
                out.append(key[:-len(m) - 1])
    return tuple(out)


def statistics(summary: dict | None) -> list[Statistic]:
    """The non-mean metrics a summary holds a value of, as :class:`Statistic` entries."""
    summary = summary or {}
    metrics = summary.get("metrics") or {}
    have = {k for k, v in metrics.items() if isinstance(v, dict) and v.get("value") is not None}
    out = []
    mink = (lambda r: _number(r.get("min_k_score")))  # text and QA (TOFU's holdout)
    if "mia_auc" in have:
        out.append(Statistic("mia_auc", ("forget", "holdout"), mink, _auc))
    ref = privleak_reference(summary)
    if "privleak" in have and ref is not None:
        out.append(Statistic("privleak", ("forget", "holdout"), mink, _privleak(ref)))
    if summary.get("task") == "text":
        for name in sorted(have):
            if name.endswith("_perplexity") and name != "wikitext_perplexity":
                out.append(Statistic(name, (name[:-len("_perplexity")],), _ppl_row,
                                     _perplexity))
    elif "model_utility" in have and mu_sets(summary):
        out.append(Statistic("model_utility", mu_sets(summary), _mu_row, _model_utility))
    return out


def groups_of(records: list[dict], stat: Statistic) -> list[dict[int, object]]:
    """Per set of ``stat``, each row's input by row index (rows without one left out)."""
    out: list[dict[int, object]] = [{} for _ in stat.sets]
    where = {s: k for k, s in enumerate(stat.sets)}
    for rec in records:
        k = where.get(rec.get("set"))
        if k is None or rec.get("index") is None:
            continue
        v = stat.value(rec)
        if v is not None:
            out[k][rec["index"]] = v
    return out
