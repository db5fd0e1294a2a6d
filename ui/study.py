"""The Results page's Studies section: launch MUSE's sustainability or scalability study of
a project with MUSE's study splits (the `sustain` command's form), and draw a study as a
curve: the chosen metrics against the request number, the Original and Retained dashed."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from sga_core import workbench as wb
from ui.cluster import backend_choice
from ui.show import panel, plain, show_error

KEY = "results.study"


def show_studies(project, root) -> None:
    """The section, shown for a project with forget parts or studies."""
    parts, studies = project.forget_parts(), wb.list_studies(project)
    if not parts and not studies:
        return
    st.subheader("Studies: sustainability and scalability (MUSE)")
    if parts:
        with panel("Launch a study", f"{KEY}.panel", expanded=not studies):
            launch_form(project, root, parts)
    if studies:
        show_curve(studies, root)


def forget_parts_note(project) -> None:
    """The Data page's line naming the project's forget parts (MUSE's study splits) and
    their rows, and where they are used."""
    parts = project.forget_parts()
    if not parts:
        return
    info = project.meta.get("forget_parts")
    info = info if isinstance(info, dict) else {}

    def rows(name: str) -> str:
        n = info.get(name, {}).get("rows") if isinstance(info.get(name), dict) else None
        return f" ({n} rows)" if isinstance(n, int) else ""

    st.caption(plain("forget parts, the requests of MUSE's studies (Results → Studies): " +
                     ", ".join(f"{name}{rows(name)}" for name in parts)))


def launch_form(project, root, parts: dict) -> None:
    groups = sorted({name.split("/")[0] for name in parts})
    st.caption(plain(f"Forget parts of {project.name}: {', '.join(groups)} "
                     f"({len(parts)} files). Sustainability: each request's run starts from "
                     "the last run's model; scalability: each forget set from the Original. "
                     "Every run is evaluated after its request."))
    backend = backend_choice(f"{KEY}.backend")
    with st.form(f"{KEY}.form", enter_to_submit=False):
        mode = st.radio("study", list(wb.STUDY_MODES), horizontal=True, key=f"{KEY}.mode",
                        format_func=lambda m: wb.STUDY_MODES[m][1].split(":")[0])
        c1, c2, c3 = st.columns(3)
        method = c1.selectbox("method", wb.method_names(), key=f"{KEY}.method",
                              index=wb.method_names().index("ga"))
        steps = c2.number_input("max steps per request (0 = epochs)", min_value=0,
                                value=0, key=f"{KEY}.steps")
        lr = c3.number_input("learning rate", min_value=0.0, value=1e-5, format="%.2e",
                             key=f"{KEY}.lr")
        c4, c5, c6 = st.columns(3)
        requests = c4.number_input("requests (0 = all)", min_value=0, value=0,
                                   key=f"{KEY}.requests")
        max_rows = c5.number_input("evaluate at most N rows (0 = all)", min_value=0,
                                   value=0, key=f"{KEY}.max_rows")
        name = c6.text_input("study name (optional)", key=f"{KEY}.name")
        go_ = st.form_submit_button("Launch study")
    if go_:
        try:
            study, dirs = wb.submit_study(
                project, mode, backend=backend, root=root, method=method,
                training={"max_steps": int(steps or 0), "lr": float(lr or 0.0)},
                requests=int(requests or 0), max_rows=int(max_rows or 0),
                name=name.strip() or None)
        except (wb.ConfigError, ValueError) as exc:
            show_error(exc, "the study was not launched")
        else:
            st.success(plain(f"Study {study.name}: {len(dirs)} runs queued "
                             f"({', '.join(d.name for d in dirs)})."))


def show_curve(studies: list, root) -> None:
    names = {s.name: s for s in studies}
    chosen = st.selectbox("study", list(names), key=f"{KEY}.chosen",
                          format_func=lambda n: f"{n} ({names[n].mode}, {names[n].method})")
    study = names[chosen]
    first = wb.study_curve(study, root)
    metrics = st.multiselect("metrics", first["available"], default=first["metrics"],
                             key=f"{KEY}.metrics.{chosen}",
                             help="MUSE's figures show KnowMem and VerbMem on the forget set "
                                  "and KnowMem on the retain set")
    curve = wb.study_curve(study, root, metrics)
    series = wb.curve_series(curve)
    fig = go.Figure()
    for s in series:
        fig.add_scatter(x=s["x"], y=s["y"], mode="lines+markers", name=s["metric"])
        for label, dash in (("Original", "dash"), ("Retained", "dot")):
            if s[label] is not None and curve["points"]:
                fig.add_scatter(x=[1, len(curve["points"])], y=[s[label]] * 2, mode="lines",
                                line={"dash": dash}, name=f"{s['metric']}: {label}")
    if any(s["x"] for s in series):
        fig.update_layout(height=340, xaxis={"title": curve["x_label"], "tickformat": "d",
                                             "dtick": 1},
                          margin=dict(l=10, r=10, t=30, b=10))
        st.plotly_chart(fig, key=f"{KEY}.plot")
    else:
        st.caption("No request of this study has been evaluated yet.")
    st.dataframe([{"request": p["request"], "forget part": p["part"], "run": p["run"],
                   "state": p["state"],
                   **{m: p["values"].get(m) for m in curve["metrics"]},
                   "note": p["why"] or ""} for p in curve["points"]], hide_index=True)
