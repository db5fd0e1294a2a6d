"""The collapse rule: an unlearning run whose retain metrics fell far below the Original's
was destroyed, not made to forget, so it does not compete for the best values."""

from __future__ import annotations

from sga_core.metrics.catalog import spec_of
from sga_core.report.columns import REFERENCE_ROWS

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
