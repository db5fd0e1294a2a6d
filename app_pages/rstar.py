"""r* analysis: per forget row, the smoothing rate that minimizes the update norm
(docs/spec.md#21-closed-form), before training; the paper's Figure 2 for your data, and a sweep over
the suggested range."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui import intervals
from ui.cluster import backend_choice
from ui.context import project_note, require_project
from ui.damaged import warn_damaged
from ui.measurable import verdict
from ui.show import as_list, follow_job, job_progress, panel, show_error

job = wb.rstar
st.title("Choose r from the gradients")
st.write("For each forget row: `a` = gradient of its answer's NLL, `b` = mean gradient of its "
         "normal answers' NLLs. The SGA update is `g(r) = -a + r·w` and "
         "`r* = <a, w> / ||w||²` minimizes its norm (`w = (K-1)/K·(a − b)` for the `label` "
         "convention, `(a + b)` for `objective`). The paper fixes r for a whole run; the "
         "distribution of r* suggests which r to try (or use *adaptive r* on the Train page).")
project = require_project()
root = wb.runs_root()

original = wb.prepared_model(project, root)
c1, c2, c3, c4 = st.columns(4)
model = c1.text_input("model", value=str(original) if original else "embedded:smollm2",
                      key="rstar.model", help="the model you are about to unlearn")
table, _ = wb.normals_problems(project)
k = int(c2.number_input("K", min_value=2, max_value=64,
                        value=table.k if table else 4, key="rstar.k"))
convention = c3.selectbox("convention", ["label", "objective"], key="rstar.conv")
last_n = int(c4.number_input("last N layers only (0 = all parameters)", min_value=0,
                             max_value=1000, value=0, key="rstar.lastn",
                             help="for large models: differentiate only the last N decoder "
                                  "layers (plus the final norm and head)"))
subset = st.text_input("or parameters whose name matches (regex; 'all' = every trainable one)",
                       value="all", key="rstar.subset")
if not original:
    st.caption("The prepared original model is being prepared (see Runs); until it is ready "
               "the analysis would use the base model." if wb.pending_model(project, root)
               else "No prepared original model for this project yet (Train page → Prepare); "
               "the analysis then uses the base model.")
problems = wb.normals_problems(project, k)[1]
if problems:
    st.warning("Normal answers are not ready:\n" + as_list(problems, 3) +
               "\n\nFix them on the Normal answers page first.")

done = wb.results_table(project, root, project.kind)  # evaluated runs: sweeps so far
warn_damaged(wb.project_runs(project, root))
with panel("Results of your sweeps: metrics versus r, across seeds",
           f"rstar.sweeps_open.{project.name}", bool(wb.r_groups(done))):
    intervals.metric_vs_r(done, project.kind, "rstar.results",
                          verdict=verdict(done, root) if done else None)

project_note(project, "analyses")
if st.button("Run r* analysis", type="primary", key="rstar.run", disabled=bool(problems)):
    try:
        job.start(project, model, k, convention, subset or "all", last_n)
        st.rerun()
    except (RuntimeError, ValueError) as exc:
        show_error(exc, "cannot start")


def render(js: dict) -> None:
    if js.get("state") == "running":
        job_progress({**js, "stage": "forget rows"}, "Analysing")
    elif js.get("state") == "failed":
        show_error(js.get("error"), "The analysis failed")


follow_job(lambda: job.status(project), render)

try:
    res = job.result(project)
except ValueError as exc:  # a damaged result.json: named, the rest of the page stays
    show_error(exc)
    res = None
if not res:
    st.stop()
summary, rows = res["summary"], res["rows"]
st.subheader("Result")
st.caption(f"model `{res['model']}` · K={res['k']} · {res['convention']} · parameters: "
           f"{res['subset']}" + (f", last {res['last_n_layers']} layers"
                                 if res.get("last_n_layers") else "") +
           f" · {res['elapsed_s']} s · {res.get('created_at', '')}")
if not summary.get("n"):
    st.warning(summary.get("reason", "r* is undefined for every row"))
    st.stop()
m = st.columns(5)
m[0].metric("rows", summary["n"])
m[1].metric("r* > 0", summary["n_positive"])
m[2].metric("r* < 0", summary["n_negative"])
m[3].metric("median r*", f"{summary['median']:.3g}")
m[4].metric("IQR", f"[{summary['q1']:.3g}, {summary['q3']:.3g}]")

import plotly.graph_objects as go  # noqa: E402

valid = [r for r in rows if r["r_star"] is not None]
fig = go.Figure()
for sign, color, name in ((1, "#2a9d8f", "r* > 0"), (-1, "#e76f51", "r* < 0")):
    sel = [r for r in valid if (r["r_star"] > 0) == (sign > 0)]
    fig.add_bar(x=[str(r["forget_index"]) for r in sel], y=[r["r_star"] for r in sel],
                marker_color=color, name=name,
                customdata=[[r["cos_ab"], r["norm_a"], r["norm_b"]] for r in sel],
                hovertemplate="row %{x}<br>r*=%{y:.3g}<br>cos(a,b)=%{customdata[0]:.3f}"
                              "<br>|a|=%{customdata[1]:.3g} |b|=%{customdata[2]:.3g}")
fig.add_hrect(y0=summary["q1"], y1=summary["q3"], fillcolor="gray", opacity=0.15,
              line_width=0, annotation_text="IQR")
fig.update_layout(height=340, xaxis_title="forget row", yaxis_title="r*",
                  margin=dict(l=10, r=10, t=30, b=10), title="r* per forget row (sign coloured)")
st.plotly_chart(fig, key="rstar.plot")
with st.expander("per-row values"):
    st.dataframe(rows, hide_index=True)

st.subheader("Sweep over the suggested range")
lo, hi = summary["suggested_range"]
hi_c = min(hi, 1.0)
if lo > 1.0:
    st.warning("The whole interquartile range is above 1, where SGA is not defined; try the "
               "largest allowed r (1) or r near it.")
    st.stop()
c1, c2, c3 = st.columns(3)
n = int(c1.number_input("runs", min_value=2, max_value=20, value=4, key="rstar.n"))
seeds = int(c2.number_input("seeds per r", min_value=1, max_value=10, value=1, key="rstar.seeds",
                            help="repeat each r over this many seeds, to see the spread"))
values = [round(lo + (hi_c - lo) * i / (n - 1), 4) for i in range(n)]
c3.write(f"r values: {', '.join(f'{v:g}' for v in values)}" +
         (" (clipped at 1)" if hi > 1 else ""))
st.caption("Runs use the project's normal answers and the default training settings; tune "
           "them on the Train page (sweep section) for anything else.")
backend = backend_choice("rstar.backend")  # this machine's queue, or one SLURM job array
if st.button("Queue sweep", key="rstar.sweep"):
    try:
        group, queued = wb.queue_sweep(lambda g, v: wb.build_config(
            project, method="sga", method_args={"r": v, "k": res["k"],
                                                "convention": res["convention"]},
            training={"seeds": str(seeds) if seeds > 1 else ""}, launch={},
            model=res["model"], sweep=g,
            normals=str(project.normals_path), eval_cfg=wb.default_eval(project, root)),
            values, "rstar", root, backend)
        st.success(f"Queued {wb.plural(len(queued), 'run')} as sweep **{group}** (see Runs).")
    except (wb.ConfigError, ValueError) as exc:
        show_error(exc, "cannot queue sweep")
