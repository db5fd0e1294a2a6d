"""The Runs page's detail of one run: drawn from the state the page read once for this
refresh (the table and the picker show the same), so the three never disagree."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from sga_core import workbench as wb
from ui import eval_steps
from ui.charts import step_chart
from ui.cluster import job_caption
from ui.damaged import unless_damaged
from ui.show import plain, state_badge
from ui.tokens import tokens_html


def eta(p: dict) -> str:
    """' · ETA 1m05s' for a progress with an ETA, else nothing."""
    return f" · ETA {wb.fmt_seconds(p['eta_s'])}" if p.get("eta_s") is not None else ""


def not_a_number_note(lines: list[str]) -> None:
    """Say where a chart's curves hold NaN or an infinity (``wb.not_a_number``'s lines): a
    chart leaves such a point out, as it leaves out one not logged, so it must be said."""
    if lines:
        st.warning(plain("Not a number (the training diverged there; the chart leaves these "
                         "steps out): " + "; ".join(lines)))


def show(run_dir: Path, selected: str, p: dict, ev: dict) -> None:
    """The run's state, progress, evaluation progress, losses, probe answers and log, from
    the state the page read for this refresh (``p``: its progress, ``ev``: its
    evaluation's)."""
    shown = "cancelling" if p.get("cancelling") else p["state"]
    st.markdown(f"**{selected}** — {state_badge(shown)}")
    job_caption(p["status"])  # a SLURM run: its job, node and wait
    if p.get("waits"):  # a run queued here: why it has not started
        st.caption(plain(f"waiting: {p['waits']}"))
    published = wb.evaluated_model(run_dir)
    if published:  # nothing was trained here: no training progress to show
        where = "" if published["path"] == published["spec"] else f" ({published['path']})"
        st.caption(plain(f"The evaluation of the published {published['role'].capitalize()}"
                         f" model {published['spec']}{where}: nothing was trained here; its "
                         "model folder links to that model."))
    else:
        st.progress(p["fraction"], text=f"{p['text']} · elapsed "
                    f"{wb.fmt_seconds(p['elapsed_s'])} · ETA {wb.fmt_seconds(p['eta_s'])}")
    if p["state"] in ("failed", "diverged", "cancelled") and p["error"]:
        (st.error if p["state"] == "failed" else st.warning)(plain(p["error"]))
    if ev["state"] in ("queued", "running"):
        st.progress(ev["fraction"], text=plain(
            f"{ev['text']} · elapsed {wb.fmt_seconds(ev['elapsed_s'])}{eta(ev)}" +
            # the bar: the whole evaluation where earlier ones time it, else this stage
            (" · bar: the whole evaluation (timed by this project's earlier ones)"
             if ev["whole"] else "" if ev["eta_s"] is None else " (this stage)")))
    elif ev["state"] in ("failed", "cancelled") and ev["error"]:
        (st.error if ev["state"] == "failed" else st.warning)(
            plain(f"evaluation {ev['state']}: {ev['error']}"))
    nll = p["status"]
    if nll.get("nll_before"):
        after = nll.get("nll_after") or {}
        st.caption("mean answer NLL " + " · ".join(
            f"{k}: {v:.3f}" + (f" → {after[k]:.3f}" if k in after else "")
            for k, v in nll["nll_before"].items()))
    m = []
    with unless_damaged(selected):
        m = wb.metrics(run_dir)
    if m:
        import plotly.graph_objects as go

        fig = go.Figure()
        curve = wb.curve_names(run_dir)  # e.g. a prepare run's forget_nll is its retain NLL
        keys = ("loss", "forget_nll", "normal_nll", "retain_nll")
        for key in keys:
            ys = [row.get(key) for row in m]
            if any(y is not None for y in ys):
                fig.add_scatter(x=[row["step"] for row in m], y=ys, mode="lines",
                                name=curve.get(key, key))
        step_chart(fig, height=300, margin=dict(l=10, r=10, t=30, b=10), title="losses")
        st.plotly_chart(fig, key=f"loss-{selected}")
        not_a_number_note(wb.not_a_number(m, keys, curve))
    eval_steps.show(run_dir, selected)  # evaluation during training, if the run has it
    probes = {}
    with unless_damaged(selected):
        probes = wb.latest_probes(run_dir)
    if probes:
        st.markdown("**Probe answers** (token colour = probability, red low, green high)")
        steps = sorted({rec["step"] for recs in probes.values() for rec in recs})
        step = steps[-1]
        if p["state"] not in ("queued", "running") and len(steps) > 1:
            step = st.select_slider("step", steps, value=steps[-1],
                                    key=f"runs.probe_step.{selected}",
                                    help="the probe answers as they were at this step")
        for idx, recs in probes.items():
            at_step = [rec for rec in recs if rec["step"] <= step]
            if not at_step:
                continue
            rec = at_step[-1]
            st.markdown(f"forget row {idx} · step {rec['step']}", help="hover a token for p")
            st.html(tokens_html(rec["tokens"], rec["probs"]))
    with st.expander("log", expanded=p["state"] == "failed"):
        st.code(wb.RunFolder(run_dir).train_log(30) or "(empty)")
