"""One run's uncertainty (bootstrap intervals over rows, Forget Quality's resolution), a
two-run comparison on the same rows (paired bootstrap), and Model Utility explained (its 9
components, the lowest marked). Sections of the Results page."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from sga_core import workbench as wb
from ui.damaged import damaged_text
from ui.show import plain


def _heat(v) -> str:
    """A background from red (0) to green (1) for values in [0, 1]."""
    if not isinstance(v, (int, float)) or v != v:
        return ""
    x = max(0.0, min(1.0, float(v)))
    return f"background-color: hsl({int(120 * x)}, 70%, 82%)"


def mu_explained(rows: list[dict]) -> None:
    """MU beside its 9 components per run (heat-coloured), the lowest one in bold."""
    parts = list(dict.fromkeys(k for r in rows for k in r if k.startswith("MU: ")))
    have = [r for r in rows if r.get("MU lowest")]
    if not parts or not have:
        return
    with st.expander("Model Utility, component by component"):
        st.caption("MU is the harmonic mean of these numbers (3 per set: the retain set and "
                   "each utility set), so the lowest one (bold) "
                   "pulls it down most: when MU falls, look for the component that fell.")
        df = pd.DataFrame([{"run": r["run"], "MU": r.get("MU"),
                            **{k[4:]: r.get(k) for k in parts},
                            "lowest": r.get("MU lowest")} for r in have])
        comps = [k[4:] for k in parts]

        def bold_lowest(row):
            return ["font-weight: bold; text-decoration: underline"
                    if c in comps and c == row["lowest"] else "" for c in row.index]

        st.dataframe(df.style.map(_heat, subset=["MU", *comps]).apply(bold_lowest, axis=1)
                     .format({c: "{:.3g}" for c in ["MU", *comps]}, na_rep="—"),
                     hide_index=True, width="stretch", key="results.mu_parts")


def _fmt(v, digits: int = 3) -> str:
    return "—" if v is None else f"{v:.{digits}g}"


def one_run(run_ids: list[str], names: dict, root) -> None:
    """Bootstrap intervals over rows for the chosen run, and FQ's resolution."""
    run_id = st.selectbox("run", run_ids, key="results.unc_run",
                          format_func=lambda i: names.get(i, i))
    try:
        rows = wb.run_intervals(root / run_id)
    except wb.Damaged as exc:  # e.g. rows missing: intervals over fewer rows would mislead
        st.warning(plain(damaged_text(run_id, exc) + " — no intervals for this run."))
        return
    if not rows:
        st.caption("This run has no per-row evaluation (eval/per_sample.jsonl).")
        return
    st.dataframe(pd.DataFrame([{"metric": r["label"], "value": _fmt(r["value"], 4),
                                "95% interval": f"[{_fmt(r['lo'])}, {_fmt(r['hi'])}]",
                                "rows": r["n"]} for r in rows]),
                 hide_index=True, width="stretch", key="results.unc_table")
    st.caption("Percentile bootstrap over the evaluated rows (2000 resamples): how much the "
               "value depends on which rows were asked, not on the training seed (for that, "
               "repeat over seeds). PrivLeak and MIA AUC resample the forget and holdout "
               "rows separately; perplexity is recomputed token-weighted on each resample; "
               "MU resamples each of its sets. With few rows these intervals are a little "
               "narrow.")
    summary = wb.summary_of(root / run_id)
    res = wb.fq_resolution(summary)
    if res:
        st.markdown("**Forget Quality's resolution.** " + plain(wb.fq_resolution_text(res)))


def compare_two(run_ids: list[str], names: dict, root) -> None:
    """Run A minus run B per metric on the rows both evaluated, paired bootstrap."""
    if len(run_ids) < 2:
        st.caption("Needs two evaluated runs.")
        return
    c1, c2 = st.columns(2)
    a = c1.selectbox("run A", run_ids, key="results.cmp_a",
                     format_func=lambda i: names.get(i, i))
    b = c2.selectbox("run B", run_ids, index=1, key="results.cmp_b",
                     format_func=lambda i: names.get(i, i))
    if a == b:
        st.caption("Choose two different runs.")
        return
    try:
        out = wb.compare_runs(root / a, root / b)
    except wb.Damaged as exc:
        st.warning(plain(f"cannot compare: {exc}"))
        return
    if not out["rows"]:
        st.caption("These runs share no evaluated rows.")
        return
    df = pd.DataFrame([{"metric": r["label"], "A": _fmt(r["a"], 4), "B": _fmt(r["b"], 4),
                        "A − B": _fmt(r["diff"], 3),
                        "95% interval": f"[{_fmt(r['lo'])}, {_fmt(r['hi'])}]",
                        "rows": r["n"],
                        "verdict": wb.difference(r)}
                       for r in out["rows"]])
    st.dataframe(df, hide_index=True, width="stretch", key="results.cmp_table")
    st.caption("Paired bootstrap over the rows both runs evaluated (resampled together). "
               "'A ≠ B': the interval of the difference excludes 0, so it is larger than "
               "the noise of these rows; 'negligibly': it lies wholly inside the metric's "
               "negligible gap (0.05 on 0-1 metrics, 10 PrivLeak points, 10% of B's "
               "perplexity), as the verdict above the table uses it." +
               (f" {wb.plural(out['mismatched'], 'row')} "
                f"{'differs' if out['mismatched'] == 1 else 'differ'} in their question and "
                "are left out." if out["mismatched"] else ""))


def uncertainty(rows: list[dict], names: dict, root) -> None:
    """The 'one run' and 'compare two runs' panels."""
    run_ids = [r["run_id"] for r in rows]
    if not run_ids:
        return
    st.subheader("Uncertainty of one run · compare two runs")
    t1, t2 = st.tabs(["one run", "compare two runs"])
    with t1:
        one_run(run_ids, names, root)
    with t2:
        compare_two(run_ids, names, root)
