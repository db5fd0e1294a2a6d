"""Results: the paper's Table 1 for your runs (with the Original and Retained rows), pooled
over seeds with intervals, MU's components, metrics versus r with error bars and a suggested
r, one run's uncertainty and a two-run comparison, loss curves, config diffs, downloads."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from sga_core import workbench as wb
from ui import intervals, run_compare
from ui.charts import step_chart
from ui.context import project_note, require_project
from ui.damaged import unless_damaged, warn_damaged
from ui.measurable import show_verdict, verdict
from ui.paper_table import show_paper_table
from ui.results_table import show_results_table, shown_columns
from ui.run_detail import not_a_number_note
from ui.show import plain
from ui.stress_table import show_stress_table
from ui.study import show_studies

st.title("Results")
project = require_project()
root = wb.runs_root()
kind = project.kind
rows = wb.results_table(project, root, kind)
specs = wb.row_columns(rows, kind)
columns = [c.label for c in specs] + wb.extra_columns(rows)
all_runs = wb.project_runs(project, root)
warn_damaged(all_runs)

if not rows:
    st.info("No evaluated run of this project yet. Runs are evaluated automatically when they "
            "complete (Train page → prepare, then launch runs); the Original and Retained rows"
            " come from the prepared models.")
else:
    st.caption(plain(wb.protocol_note(rows) or ""))
    # can the Original and Retained be told apart? computed once: it drives the banner, the
    # table's and the paper table's best values and the r suggestion below
    measured = verdict(rows, root)
    show_verdict(measured)
    rank, skip = wb.can_rank(measured), wb.unranked(measured)
    shown = shown_columns(project.name, rows, kind)  # attacks, prob_mean: on request
    specs += shown
    columns = [c.label for c in specs] + wb.extra_columns(rows)
    show_results_table(rows, specs, kind, wb.extra_columns(rows), rank, skip, root)
    st.caption(" ".join(f"**{c.label}** ({wb.DIRECTIONS[c.direction]}): {c.help}."
                        for c in specs))
    whys = {f"{r['run']}: {c}": r[f"{c} (why)"] for r in rows for c in columns
            if f"{c} (why)" in r}
    if whys:
        n = len(whys)
        with st.expander(f"{n} {'value' if n == 1 else 'values'} could not be computed: why"):
            for k, v in whys.items():
                st.markdown(f"**{plain(k)}** — {plain(v)}")
    run_compare.mu_explained(rows)
    intervals.pooled_table(rows, kind, shown)
    show_paper_table(rows, root, kind, rank, skip)
    intervals.downloads(rows, kind, project.name)
    show_stress_table(rows, root, kind)

    st.subheader("Metrics versus r")
    original = next((r for r in rows if r["run"] == "Original"), {})
    intervals.metric_vs_r(rows, kind, "results", original.get("FQ"), measured)
    run_compare.uncertainty(rows, wb.display_names(all_runs, project), root)

show_studies(project, root)  # MUSE's sustainability / scalability studies, when imported

st.subheader("Loss curves")
names = wb.display_names(all_runs, project)
trained = [r["run_id"] for r in all_runs if r["method"] != "finetune"]
started = [i for i in trained if wb.RunFolder.of(i, root).metrics_path.exists()]  # not queued
# keyed by what has trained: a run that finishes (or another project) brings a new default
chosen = st.multiselect("runs", trained, default=started[:3],
                        key=f"results.curves.{project.name}.{len(started)}",
                        format_func=lambda i: names.get(i, i),
                        help="starts with the three newest runs that have trained")
metric = st.selectbox("curve", ["forget_nll", "loss", "normal_nll", "retain_nll", "r"],
                      key="results.curve_metric")
if chosen:
    fig, nan_lines = go.Figure(), []
    for run_id in chosen:
        with unless_damaged(run_id):
            m = wb.metrics(root / run_id)
            nan_lines += [f"{names.get(run_id, run_id)} {line}"
                          for line in wb.not_a_number(m, [metric])]
            ys = [p.get(metric) for p in m]
            if any(y is not None for y in ys):
                fig.add_scatter(x=[p["step"] for p in m], y=ys, mode="lines",
                                name=names.get(run_id, run_id))
    if fig.data:
        step_chart(fig, height=320, yaxis_title=metric, margin=dict(l=10, r=10, t=30, b=10))
        st.plotly_chart(fig, key="results.curves_plot")
    else:
        st.caption(f"The chosen runs did not log {metric} (retain_nll needs a method that "
                   "trains on retain rows, e.g. GradDiff; r only varies with adaptive r).")
    not_a_number_note(nan_lines)

st.subheader("Config diff")
ids = [r["run_id"] for r in all_runs]
if len(ids) >= 2:
    c1, c2 = st.columns(2)
    a = c1.selectbox("run A", ids, key="results.diff_a", format_func=lambda i: names.get(i, i))
    b = c2.selectbox("run B", ids, index=1, key="results.diff_b",
                     format_func=lambda i: names.get(i, i))
    try:
        diff = wb.config_diff(root / a, root / b)
    except wb.Damaged as exc:
        st.warning(plain(f"cannot compare the settings: {exc}"))
    else:
        if diff:  # values as text: one column can hold a bool, a number and a missing value
            st.dataframe([{k: "—" if v is None else str(v) for k, v in d.items()}
                          for d in diff], hide_index=True)
        else:
            st.write("Same settings.")

pending = [r for r in all_runs if r["state"] == "completed" and
           not wb.RunFolder(r["path"]).summary_path.exists()]
if pending:
    waiting = [r["run_id"] for r in pending if r.get("eval_state") not in ("queued", "running")]
    evaluating = [r for r in pending if r.get("eval_state") in ("queued", "running")]

    @st.fragment(run_every=2.0 if evaluating else None)
    def pending_evaluations():
        status = wb.eval_status_of(all_runs)
        for r in evaluating:
            ev = status[r["run_id"]]
            eta = f" · ETA {wb.fmt_seconds(ev['eta_s'])}" if ev["eta_s"] is not None else ""
            st.progress(ev["fraction"], text=plain(f"{names.get(r['run_id'], r['run_id'])}: "
                                                   f"{ev['text']}{eta}"))
        if evaluating and not any(status[r["run_id"]]["state"] in ("queued", "running")
                                  for r in evaluating):
            st.rerun()  # done: show the new rows

    pending_evaluations()
    blocked = {i: wb.eval_refusal(root / i) for i in waiting}  # an evaluation that would fail
    for run_id, why in blocked.items():
        if why:
            st.warning(plain(f"{run_id} cannot be evaluated: {why}."))
    waiting = [i for i in waiting if not blocked[i]]
    if waiting:
        st.caption(f"Not evaluated yet: {', '.join(waiting)}")
        project_note(project, "evaluates runs of")
        if st.button("Evaluate them now (queued jobs)", key="results.eval"):
            for run_id in waiting:
                try:
                    wb.request_eval(root / run_id)
                except ValueError as exc:  # changed since the page was drawn
                    st.warning(plain(str(exc)))
            st.rerun()
