"""Before/after probe: type any question and see the original model and chosen runs answer
it side by side, with each answer token's probability."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.context import project_note, require_project
from ui.damaged import warn_damaged
from ui.show import follow_job, job_progress, plain, show_error
from ui.tokens import tokens_html

st.title("Before / after probe")
project = require_project()
warn_damaged(wb.project_runs(project))
candidates = wb.probe_models(project)
if not candidates:
    st.info("No trained models yet: prepare the project and launch runs on the Train page.")
    st.stop()
question = st.text_input("question" if project.kind == "qa" else "text prefix",
                         value=project.forget()[0].get("question", ""), key="probe.q")
chosen = st.multiselect("models", list(candidates), default=list(candidates)[:3],
                        key="probe.models")
max_new = int(st.number_input("max new tokens", 8, 256, 48, key="probe.max_new"))
project_note(project, "asks the models of")
if st.button("Ask", type="primary", key="probe.ask"):
    try:
        wb.probe.start(project, question, {k: candidates[k] for k in chosen}, project.kind,
                       max_new)
        st.rerun()
    except (RuntimeError, ValueError) as exc:
        show_error(exc, "cannot ask")


def render(js: dict) -> None:
    if js.get("state") == "running":
        job_progress({**js, "stage": f"answering with {js.get('current', '...')}"}, "Probe")
    elif js.get("state") == "failed":
        show_error(js.get("error"), "The probe failed")
    res = wb.probe.result(project)
    if res:
        # what was asked, named by the project's kind: a text task's prefix is no question
        asked = "Q:" if res.get("kind", "qa") == "qa" else "Text prefix:"
        st.markdown(f"**{asked}** {plain(res['question'])}")
        cols = st.columns(max(1, len(res["answers"])))
        for col, (label, a) in zip(cols, res["answers"].items()):
            col.markdown(f"**{plain(label)}**")
            col.text(a["answer"] or "(empty)")
            col.html(tokens_html(a["tokens"], a["probs"]))


follow_job(lambda: wb.probe.status(project), render)
