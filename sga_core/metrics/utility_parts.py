"""Model Utility explained: the 9 numbers its harmonic mean is taken over, named, and the
lowest one (a harmonic mean is pulled down most by its smallest part, so the lowest component
is usually what moved MU)."""

from __future__ import annotations

from collections.abc import Mapping

from .tofu import MODEL_UTILITY_KEYS, MODEL_UTILITY_METRICS, MODEL_UTILITY_SETS

SHORT = {"probability": "prob", "rouge": "ROUGE-L", "truth_ratio": "TR"}


def component_label(key: str) -> str:
    """``retain_truth_ratio`` -> ``retain TR``."""
    for m in MODEL_UTILITY_METRICS:
        if key.endswith("_" + m):
            return f"{key[:-len(m) - 1]} {SHORT[m]}"
    return key


def components(summary: Mapping | None) -> dict[str, float | None]:
    """The 9 components of a summary's Model Utility, by key (``MODEL_UTILITY_KEYS`` order):
    each from its own metric in the summary, else from MU's kept per-sample list; {} when
    the summary has no Model Utility."""
    metrics = (summary or {}).get("metrics") or {}
    mu = metrics.get("model_utility")
    if not mu:
        return {}
    per = mu.get("per_sample") or []
    out = {}
    for i, key in enumerate(MODEL_UTILITY_KEYS):
        value = (metrics.get(key) or {}).get("value")
        if value is None and i < len(per):
            value = per[i]
        out[key] = float(value) if isinstance(value, (int, float)) else None
    return out


def lowest(parts: Mapping[str, float | None]) -> str | None:
    """The key of the smallest component (None when none has a value)."""
    known = {k: v for k, v in parts.items() if v is not None}
    return min(known, key=known.get) if known else None


def breakdown(values: Mapping) -> dict:
    """``{"components": {key: value}, "lowest": key}`` from metric results or values by key
    (what the evaluation writes beside MU in summary.json)."""
    from .result import scalar_of

    parts = {f"{s}_{m}": scalar_of(values.get(f"{s}_{m}")) for s in MODEL_UTILITY_SETS
             for m in MODEL_UTILITY_METRICS}
    return {"components": parts, "lowest": lowest(parts)}
