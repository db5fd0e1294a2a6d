"""Results: the paper's Table 1 for your runs (with the Original and Retained rows), metrics
versus r for a sweep, loss curves overlaid, config diffs, downloads."""

from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from sga_core import workbench as wb
from ui.context import project_note, require_project
from ui.paper_table import show_paper_table
from ui.show import plain

st.title("Results")
project = require_project()
root = wb.runs_root()
kind = project.kind
specs = wb.table_columns(kind)
columns = [c.label for c in specs]
rows = wb.results_table(project, root, kind)
all_runs = wb.project_runs(project, root)

if not rows:
    st.info("No evaluated run of this project yet. Runs are evaluated automatically when they "
            "complete (Train page → prepare, then launch runs); the Original and Retained rows"
            " come from the prepared models.")
else:
    df = pd.DataFrame(rows)
    shown = ["run", "method", "r", "K"] + list(columns)
    best = wb.best_values(rows, kind)

    def highlight(col):
        b = best.get(col.name)
        return ["font-weight: bold; background-color: #d8f3dc" if b is not None and v == b
                and df.loc[i, "run"] not in ("Original", "Retained") else ""
                for i, v in col.items()]

    intro = ("One row per evaluated run, with the Original (before unlearning) and Retained "
             "(never saw the forget set: the target) models first; the best unlearning value "
             "of each metric in bold. ")
    st.caption(intro + " ".join(f"**{c.label}** ({wb.DIRECTIONS[c.direction]}): {c.help}."
                                for c in specs) + " — = cannot be computed (why: below).")
    df["K"] = df["K"].astype("Int64")
    fmt = {c: "{:.4g}" for c in columns}
    fmt["r"] = "{:g}"
    st.dataframe(df[shown].style.apply(highlight, subset=list(columns)).format(
        fmt, na_rep="—").format(na_rep="—", subset=["method", "K"]),
        hide_index=True, width="stretch")
    whys = {f"{r['run']}: {c}": r[f"{c} (why)"] for r in rows for c in columns
            if f"{c} (why)" in r}
    if whys:
        n = len(whys)
        with st.expander(f"{n} {'value' if n == 1 else 'values'} could not be computed: why"):
            for k, v in whys.items():
                st.markdown(f"**{plain(k)}** — {plain(v)}")
    show_paper_table(rows, root, kind)
    c1, c2 = st.columns(2)
    c1.download_button("Download CSV", df.to_csv(index=False), f"{project.name}-results.csv",
                       "text/csv", key="results.csv")
    c2.download_button("Download JSON", json.dumps(rows, indent=1), f"{project.name}-results"
                       ".json", "application/json", key="results.json")

    sweeps = wb.r_groups(rows)
    st.subheader("Metrics versus r")
    if not sweeps:
        st.caption("Appears once two runs of a method at different r are evaluated (or a "
                   "sweep: Train page → Sweep over r).")
    else:
        sweep = st.selectbox("runs", sweeps, key="results.sweep",
                             help="a sweep, or all runs of one method")
        series = wb.sweep_series(rows, sweep, kind)
        fig = go.Figure()
        for col in columns:
            if any(v is not None for v in series[col]):
                fig.add_scatter(x=series["r"], y=series[col], mode="lines+markers", name=col)
        for ref in ("Original", "Retained"):
            row = next((r for r in rows if r["run"] == ref), None)
            if row and row.get("FQ") is not None and ref == "Original":
                fig.add_hline(y=row["FQ"], line_dash="dot", annotation_text="Original FQ")
        fig.update_layout(height=380, xaxis_title="r", yaxis_title="metric value",
                          margin=dict(l=10, r=10, t=30, b=10))
        st.plotly_chart(fig, key="results.sweep_plot")

st.subheader("Loss curves")
names = wb.display_names(all_runs, project)
trained = [r["run_id"] for r in all_runs if r["method"] != "finetune"]
chosen = st.multiselect("runs", trained, default=trained[:3], key="results.curves",
                        format_func=lambda i: names.get(i, i))
metric = st.selectbox("curve", ["forget_nll", "loss", "normal_nll", "retain_nll", "r"],
                      key="results.curve_metric")
if chosen:
    fig = go.Figure()
    for run_id in chosen:
        m = wb.metrics(root / run_id)
        ys = [p.get(metric) for p in m]
        if any(y is not None for y in ys):
            fig.add_scatter(x=[p["step"] for p in m], y=ys, mode="lines",
                            name=names.get(run_id, run_id))
    if fig.data:
        fig.update_layout(height=320, xaxis_title="step", yaxis_title=metric,
                          margin=dict(l=10, r=10, t=30, b=10))
        st.plotly_chart(fig, key="results.curves_plot")
    else:
        st.caption(f"The chosen runs did not log {metric} (retain_nll needs a method that "
                   "trains on retain rows, e.g. GradDiff; r only varies with adaptive r).")

st.subheader("Config diff")
ids = [r["run_id"] for r in all_runs]
if len(ids) >= 2:
    c1, c2 = st.columns(2)
    a = c1.selectbox("run A", ids, key="results.diff_a", format_func=lambda i: names.get(i, i))
    b = c2.selectbox("run B", ids, index=1, key="results.diff_b",
                     format_func=lambda i: names.get(i, i))
    diff = wb.config_diff(root / a, root / b)
    if diff:
        st.dataframe(diff, hide_index=True)
    else:
        st.write("Same settings.")

pending = [r["run_id"] for r in all_runs if r["state"] == "completed" and
           not (root / r["run_id"] / "eval" / "summary.json").exists()]
if pending:
    st.caption(f"Not evaluated yet: {', '.join(pending)}")
    project_note(project, "evaluates runs of")
    if st.button("Evaluate them now (queued jobs)", key="results.eval"):
        for run_id in pending:
            wb.request_eval(root / run_id)
        st.rerun()
