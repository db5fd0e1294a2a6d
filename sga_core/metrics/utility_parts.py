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
    """The components of a summary's Model Utility, by key (``<set>_<metric>``, in MU's
    order): as the evaluation recorded them (``model_utility_components``: the retain set and
    the project's own utility sets, whatever their names), else, for summaries written before
    that, TOFU's 9 (``MODEL_UTILITY_KEYS``) each from its own metric or MU's per-sample list;
    {} when the summary has no Model Utility."""
    metrics = (summary or {}).get("metrics") or {}
    mu = metrics.get("model_utility")
    if not mu:
        return {}
    recorded = ((summary or {}).get("model_utility_components") or {}).get("components")
    if isinstance(recorded, Mapping) and recorded:
        return {k: float(v) if isinstance(v, (int, float)) else None
                for k, v in recorded.items()}
    per = mu.get("per_sample") or []
    out = {}
    for i, key in enumerate(MODEL_UTILITY_KEYS):
        value = (metrics.get(key) or {}).get("value")
        if value is None and i < len(per):
            value = per[i]
        out[key] = float(value) if isinstance(value, (int, float)) else None
    return out


def component_sets(summary: Mapping | None) -> list[str]:
    """The sets a summary's Model Utility is taken over (the retain set and its utility
    sets), from its :func:`components`."""
    return list(dict.fromkeys(k[:-len(m) - 1] for k in components(summary)
                              for m in MODEL_UTILITY_METRICS if k.endswith("_" + m)))


def lowest(parts: Mapping[str, float | None]) -> str | None:
    """The key of the smallest component (None when none has a value)."""
    known = {k: v for k, v in parts.items() if v is not None}
    return min(known, key=known.get) if known else None


def breakdown(values: Mapping, sets=MODEL_UTILITY_SETS) -> dict:
    """``{"components": {key: value}, "lowest": key}`` over MU's ``sets``
    (:func:`~sga_core.metrics.tofu.mu_sets`) from metric results or values by key (what the
    evaluation writes beside MU in summary.json)."""
    from .result import scalar_of

    parts = {f"{s}_{m}": scalar_of(values.get(f"{s}_{m}")) for s in sets
             for m in MODEL_UTILITY_METRICS}
    return {"components": parts, "lowest": lowest(parts)}
