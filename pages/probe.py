"""Before/after probe: type any question and see the original model and chosen runs answer
it side by side, with each answer token's probability."""

from __future__ import annotations

import streamlit as st

from pages._common import current_project, show_error
from sga_core.live import tokens_html
from sga_core.projects import probe_job
from sga_core.projects.training import original_run_id, prepared_model
from sga_core.results import project_runs
from sga_core.runs.folder import runs_root

st.title("Before / after probe")
project = current_project()
if project is None:
    st.stop()
root = runs_root()
candidates = {}
orig = prepared_model(project, root)
if orig:
    candidates["Original"] = str(orig)
for r in project_runs(project, root):
    if r["run_id"] != original_run_id(project) and (root / r["run_id"] / "model" /
                                                     "config.json").exists():
        candidates[r["run_id"]] = str(root / r["run_id"] / "model")
if not candidates:
    st.info("No trained models yet: prepare the project and launch runs on the Train page.")
    st.stop()
question = st.text_input("question" if project.kind == "qa" else "text prefix",
                         value=project.forget()[0].get("question", ""), key="probe.q")
chosen = st.multiselect("models", list(candidates), default=list(candidates)[:3],
                        key="probe.models")
max_new = int(st.number_input("max new tokens", 8, 256, 48, key="probe.max_new"))
if st.button("Ask", type="primary", key="probe.ask"):
    try:
        probe_job.start(project, question, {k: candidates[k] for k in chosen}, project.kind,
                        max_new)
        st.rerun()
    except (RuntimeError, ValueError) as exc:
        show_error(exc, "cannot ask")

state = probe_job.status(project)


@st.fragment(run_every=1.0 if state.get("state") == "running" else None)
def answers():
    js = probe_job.status(project)
    if js.get("state") == "running":
        st.progress((js.get("done") or 0) / max(1, js.get("total") or 1),
                    text=f"answering with {js.get('current', '...')}")
    elif js.get("state") == "failed":
        st.error(f"The probe failed: {js.get('error')}")
    res = probe_job.result(project)
    if res:
        st.markdown(f"**Q:** {res['question']}")
        cols = st.columns(max(1, len(res["answers"])))
        for col, (label, a) in zip(cols, res["answers"].items()):
            col.markdown(f"**{label}**")
            col.write(a["answer"] or "(empty)")
            col.html(tokens_html(a["tokens"], a["probs"]))
    if state.get("state") == "running" and js.get("state") != "running":
        st.rerun(scope="app")


answers()
