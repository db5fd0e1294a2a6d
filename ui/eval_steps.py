"""The Runs page's view of evaluation during training (``eval_steps.jsonl``): each metric
against the step, the best step marked, what each evaluation cost. Drawn inside the live
view, so it grows while the run trains."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from sga_core import workbench as wb
from ui.charts import step_chart
from ui.show import plain


def show(run_dir, key: str) -> None:
    try:
        recs = wb.eval_steps(run_dir)
    except wb.Damaged:
        return  # the run is shown as damaged above, naming the file
    if not recs:
        return
    steps = [r["step"] for r in recs]
    fig = go.Figure()
    for name in wb.STEP_METRICS:
        ys = [r.get(name) for r in recs]
        if any(y is not None for y in ys):
            fig.add_scatter(x=steps, y=ys, mode="lines+markers", name=name)
    best = [r for r in recs if r.get("best")]
    status = wb.progress(run_dir)["status"]
    metric = status.get("best_metric")
    if best:
        fig.add_vline(x=best[-1]["step"], line_dash="dot",
                      annotation_text=f"best {metric or ''}".strip())
    step_chart(fig, height=300, margin=dict(l=10, r=10, t=30, b=10), yaxis_title="value",
               title="evaluation during training")
    st.plotly_chart(fig, key=f"eval-steps-{key}")
    last = recs[-1]
    cost = sum(r.get("eval_s") or 0 for r in recs) / len(recs)
    text = (f"{wb.plural(len(recs), 'evaluation')} on {last['forget_rows']} forget and "
            f"{wb.plural(last['retain_rows'], 'retain row')} "
            f"(ROUGE-L on {last['rouge_rows']} of each), {cost:.1f} s each on average.")
    if best:
        text += (f" Best {metric}: {best[-1].get(metric):.4g} at step {best[-1]['step']}"
                 + (" (its model is kept in best_model/)." if status.get("best_model")
                    else "."))
    st.caption(plain(text))
    reasons = {k: v for k, v in (last.get("reasons") or {}).items() if v}
    if reasons:
        st.caption(plain("Not measured: " + "; ".join(f"{k}: {v}" for k, v in
                                                       reasons.items())))
