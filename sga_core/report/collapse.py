"""The collapse rule: an unlearning run whose retain metrics fell far below the Original's
was destroyed, not made to forget, so it does not compete for the best values."""

from __future__ import annotations

from sga_core.metrics.catalog import sets_read, spec_of
from sga_core.report.columns import REFERENCE_ROWS

#: A run is *collapsed* when a retain metric falls far below the Original's: the model was
#: destroyed rather than made to forget, and its forget metrics (near-zero probability and
#: ROUGE-L) would otherwise look like the best unlearning. (metric, "below"/"above", factor)
COLLAPSE_RULES = {
    "qa": (("retain_probability", "below", 0.1), ("retain_rouge", "below", 0.5)),
    "text": (("retain_knowmem", "below", 0.5), ("holdout_perplexity", "above", 10.0)),
}
_WHY = {0.1: "a tenth of", 0.5: "half of", 10.0: "10 times"}
#: A "below" rule cannot tell a collapse from noise when the Original's own value is this
#: small (it has next to nothing to lose: KnowMem retain 0.0372 over 5 questions, halved, is
#: one word; the Retained's 0 would "collapse" too) ...
MIN_ORIGINAL = {"retain_probability": 0.01, "retain_rouge": 0.1, "retain_knowmem": 0.1}
#: ... nor any rule when the run's or the Original's value was computed on fewer rows than
#: this (where the summary says how many: ``rows`` of the sets the metric reads)
MIN_ROWS = 10


def collapse_rule(kind: str = "qa") -> str:
    """The collapse rule of ``kind`` in words, with its reason."""
    parts = [f"{spec_of(name, kind).label} {side} {_WHY.get(f, f'{f:g} x')} the Original's"
             for name, side, f in COLLAPSE_RULES[kind]]
    why = ("retain answers 10 times less likely (+2.3 nats per token) or half of their words "
           "gone is a broken model, not forgetting" if kind == "qa" else
           "half the retain knowledge gone, or text 10 times less likely, is a broken model, "
           "not forgetting")
    return (f"collapsed = {' or '.join(parts)} ({why}); cannot tell where the Original's "
            f"value is too small to judge (below {_floors(kind)}) or either value comes from "
            f"fewer than {MIN_ROWS} rows")


def _floors(kind: str) -> str:
    return ", ".join(f"{spec_of(name, kind).label} {MIN_ORIGINAL[name]:g}"
                     for name, side, _ in COLLAPSE_RULES[kind]
                     if side == "below" and name in MIN_ORIGINAL)


def collapse_rows(summary: dict | None, kind: str = "qa") -> dict[str, int]:
    """The rows each collapse metric of a summary was computed on (summary key -> count),
    from the summary's ``rows`` of the sets the metric reads; a metric whose sets the
    summary does not count is left out (unknown)."""
    rows = (summary or {}).get("rows") or {}
    out = {}
    for name, _, _ in COLLAPSE_RULES[kind]:
        sets = sets_read(name, kind)
        if sets and all(isinstance(rows.get(s), int) for s in sets):
            out[name] = sum(rows[s] for s in sets)
    return out


def mark_collapse(rows: list[dict], kind: str = "qa",
                  counts: dict[str, dict[str, int]] | None = None) -> list[dict]:
    """Flag each unlearning row (in place, and return the rows): ``collapsed`` is True when
    a rule of :data:`COLLAPSE_RULES` holds against the Original row, False when none does,
    None when it cannot be judged (no evaluated Original, the values are missing, or a rule
    cannot tell: the Original's value below :data:`MIN_ORIGINAL`, or fewer than
    :data:`MIN_ROWS` rows behind either value; ``counts``: run id -> :func:`collapse_rows`);
    ``collapsed (why)`` says which values decided it ("cannot tell: too few rows ...")."""
    counts = counts or {}
    original = next((r for r in rows if r["run"] == "Original"), None)
    base_n = counts.get((original or {}).get("run_id"), {})
    for row in rows:
        if row["run"] in REFERENCE_ROWS:
            continue
        own_n = counts.get(row.get("run_id"), {})
        hits, checked, unsure = [], [], []
        for name, side, factor in COLLAPSE_RULES[kind]:
            label = spec_of(name, kind).label
            own, base = row.get(label), (original or {}).get(label)
            if own is None or base is None:
                continue
            n = [c for c in (own_n.get(name), base_n.get(name)) if c is not None]
            floor = MIN_ORIGINAL.get(name) if side == "below" else None
            if n and min(n) < MIN_ROWS:
                unsure.append(f"too few rows: {label} {own:.3g} vs the Original's {base:.3g} "
                              f"over {min(n)} rows (fewer than {MIN_ROWS})")
                continue
            if floor is not None and base < floor:
                unsure.append(f"the Original's {label} {base:.3g} is below {floor:g}, too "
                              f"small to tell {_WHY.get(factor, factor)} it from noise")
                continue
            limit = base * factor
            bad = own < limit if side == "below" else own > limit
            text = (f"{label} {own:.3g} {'<' if side == 'below' else '>'} {limit:.3g} "
                    f"({_WHY.get(factor, factor)} the Original's {base:.3g})")
            (hits if bad else checked).append(text if bad else
                                              f"{label} {own:.3g} vs the Original's {base:.3g}")
        if hits:
            row["collapsed"], row["collapsed (why)"] = True, "; ".join(hits)
        elif unsure:
            row["collapsed"] = None
            row["collapsed (why)"] = "cannot tell: " + "; ".join(unsure) + (
                "; kept: " + "; ".join(checked) if checked else "")
        elif checked:
            row["collapsed"], row["collapsed (why)"] = False, "kept: " + "; ".join(checked)
        else:
            row["collapsed"] = None
            row["collapsed (why)"] = ("no evaluated Original to compare with" if original is
                                      None else "its retain metrics are missing")
    return rows
