"""Computing the catalog's metrics (:mod:`sga_core.metrics.catalog`) from the evaluated sets,
and turning the results into summary entries and per-sample records.

The QA and text evaluations only build their sets and fill the model-side inputs the
catalog's metrics need; everything named here comes from the catalog.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from sga_core.evaluation.common import finite, own_indices, retain_subset
from sga_core.metrics.catalog import UTILITY_SET, Instance, check_names, sample_keys
from sga_core.metrics.context import MetricInputs, SetData
from sga_core.metrics.result import MetricResult, missing


def sets_needing(instances: Sequence[Instance], sets: dict[str, SetData],
                 need: str) -> list[str]:
    """The sets (with rows, in ``sets`` order) that a metric needing ``need`` reads, of the
    metrics whose every set has rows (one that cannot be computed needs no inputs: the
    attacks of a QA project without a holdout set score no forget rows)."""
    wanted = {s for i in instances if need in i.spec.needs
              and all(o in sets and sets[o].rows for o in i.on) for s in i.on}
    return [n for n, d in sets.items() if n in wanted and d.rows]


def retain_set(retain_rows, max_retain_rows: int = 0, row_ids=None) -> SetData:
    """The evaluated retain rows: an evenly spaced subset of at most ``max_retain_rows``
    (0 = all), each with its own index (``row_ids["retain"]`` where ``eval.max_rows`` gave
    only a subset of the set)."""
    rows = list(retain_rows or [])
    keep = retain_subset(len(rows), max_retain_rows)
    base = own_indices(row_ids, "retain", len(rows))
    return SetData("retain", [rows[i] for i in keep], [base[i] for i in keep])


def flat_rows(sets: dict[str, SetData], names: Sequence[str]) -> list:
    """The rows of the named sets, one after the other."""
    return [row for n in names for row in sets[n].rows]


def scatter(sets: dict[str, SetData], names: Sequence[str], values: Sequence,
            field: str) -> None:
    """Hand a flat list (in :func:`flat_rows` order) back to the sets' ``field``."""
    pos = 0
    for n in names:
        k = len(sets[n].rows)
        setattr(sets[n], field, list(values[pos:pos + k]))
        pos += k


def compute_metrics(instances: Sequence[Instance], sets: dict[str, SetData],
                    absent: Callable[[str], str], *, reference=None,
                    reference_reason: str | None = None,
                    self_reference: bool = False,
                    options: dict | None = None, mia_reference: dict | None = None,
                    mia_reference_reason: str | None = None) -> dict[str, MetricResult]:
    """Each metric instance, in order; a metric whose set has no rows gets ``absent(set)``
    as its reason. ``options`` are the protocol's settings the metrics read;
    ``mia_reference``: a QA evaluation's reference AUCs (PrivLeak)."""
    results: dict[str, MetricResult] = {}
    for inst in instances:
        gone = next((s for s in inst.on if s not in sets or not sets[s].rows), None)
        if gone is not None:
            res = missing(inst.name, absent(gone))
        else:
            res = inst.spec.compute(MetricInputs(inst.name, sets, inst.on, results, reference,
                                                 reference_reason, self_reference,
                                                 dict(options or {}), mia_reference,
                                                 mia_reference_reason))
        results[inst.name] = replace(res, name=inst.name)
    return results


def metric_entry(result: MetricResult, keep_per_sample: bool = False) -> dict:
    """A summary entry ``{"name", "value", "reason"}`` (from :meth:`MetricResult.to_dict`);
    a non-finite value becomes None with a reason."""
    d = result.to_dict()
    if not keep_per_sample:
        d.pop("per_sample", None)
    v = d.get("value")
    if v is not None and not math.isfinite(float(v)):
        d["value"] = None
        d["reason"] = f"not a finite number ({v})"
    elif v is not None:
        d["value"] = float(v)
    return finite(d)


def summary_metrics(kind: str, instances: Sequence[Instance],
                    results: dict[str, MetricResult]) -> dict[str, dict]:
    """The summary's ``metrics``: exactly the catalog's names (KeyError otherwise)."""
    check_names(kind, results)
    keep = {i.name: i.spec.keep_per_sample for i in instances}
    return {name: metric_entry(res, keep.get(name, False)) for name, res in results.items()}


def sample_records(sets: dict[str, SetData], instances: Sequence[Instance],
                   results: dict[str, MetricResult], keys: Sequence[str],
                   base: Callable[[SetData, int], dict]) -> list[dict]:
    """One record per row of each set: ``keys`` in order, filled by ``base(set, j)`` (the
    row and its model-side inputs), then by each metric with a ``sample_key`` (its
    ``per_sample`` runs over the rows of the sets it reads, one set after the other)."""
    fills: dict[str, list[tuple[int, str, list]]] = {}
    for inst in instances:
        if not inst.spec.sample_key:
            continue
        offset = 0
        for s in inst.on:
            fills.setdefault(s, []).append((offset, inst.spec.sample_key,
                                            results[inst.name].per_sample))
            offset += len(sets[s].rows) if s in sets else 0
    out = []
    for name, d in sets.items():
        if name == UTILITY_SET:  # lm-eval tasks: no rows of their own in per_sample.jsonl
            continue
        for j in range(len(d.rows)):
            rec = dict.fromkeys(keys) | base(d, j)
            for offset, key, values in fills.get(name, []):
                if offset + j < len(values):
                    rec[key] = values[offset + j]
            out.append(rec)
    return out


def evaluate_catalog(kind: str, sets: dict[str, SetData], instances: Sequence[Instance],
                     fill: Callable[[dict, Sequence[Instance]], dict],
                     absent: Callable[[str], str], input_keys: Sequence[str],
                     base: Callable[[SetData, int], dict], *, retain_rows=None,
                     reference=None, reference_reason: str | None = None,
                     self_reference: bool = False, options: dict | None = None,
                     mia_reference: dict | None = None,
                     mia_reference_reason: str | None = None
                     ) -> tuple[dict[str, MetricResult], dict, list[dict]]:
    """Evaluate the catalog's metrics on the sets: ``fill(sets, instances)`` computes the
    model-side inputs (and returns its timings), then every metric is computed.

    Returns ``(results, summary, per-sample records)``: the summary holds the task, the
    metrics, the rows per set, the retain subset and the timings; the records' keys are
    ``input_keys`` then the catalog's per-sample keys."""
    t0 = time.time()
    timings = fill(sets, instances)
    results = compute_metrics(instances, sets, absent, reference=reference,
                              reference_reason=reference_reason,
                              self_reference=self_reference, options=options,
                              mia_reference=mia_reference,
                              mia_reference_reason=mia_reference_reason)
    records = sample_records(sets, instances, results, tuple(input_keys) + sample_keys(kind),
                             base)
    timings[f"{kind}_total_s"] = round(time.time() - t0, 3)
    total = len(list(retain_rows or []))
    keep = sets["retain"].indices
    summary = {"task": kind, "metrics": summary_metrics(kind, instances, results),
               "rows": {name: len(d.rows) for name, d in sets.items() if name != UTILITY_SET},
               "retain_rows_total": total,
               "retain_indices": keep if len(keep) < total else None,
               "timings": timings}
    return results, summary, finite(records)
