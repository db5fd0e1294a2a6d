"""Home: what the workbench does, the steps in order, and where things stand."""

import streamlit as st

from pages._common import current_project, state_badge
from sga_core.model.losses import describe_coefficients
from sga_core.projects.training import prepared_model, prepared_reference
from sga_core.runs.folder import list_runs, runs_root

st.title("SGA Workbench")
st.write(
    "Make a language model forget some data while keeping the rest, with **Smoothed Gradient "
    "Ascent**: each forget answer is mixed with K-1 *normal* answers through a smoothing rate "
    "r (r = 0 is plain gradient ascent, negative r also learns the normal answers)."
)
project = current_project()
root = runs_root()
runs = list_runs(root)

st.subheader("Steps")
table = project.normals() if project else None
steps = [
    ("pages/data.py", "1. Data", f"project **{project.name}**: {len(project.forget())} forget "
     f"rows" if project else "create a project"),
    ("pages/normals.py", "2. Normal answers",
     "complete" if table is not None and table.is_complete(len(project.forget()))
     else "generate and review them"),
    ("pages/train.py", "3. Prepare models",
     "original and retain reference ready" if project and prepared_model(project, root) and
     prepared_reference(project, root) else "fine-tune the model to unlearn (Train page)"),
    ("pages/rstar.py", "4. Choose r", "estimate r* from the gradients (optional)"),
    ("pages/train.py", "5. Train", f"{sum(r['method'] not in ('finetune', None) for r in runs)}"
     " unlearning runs so far"),
    ("pages/runs.py", "6. Watch", "live progress, losses and token probabilities"),
    ("pages/results.py", "7. Compare", "the paper's Table 1, metrics versus r, the French "
     "token"),
]
for page, label, note in steps:
    c1, c2 = st.columns([1, 3])
    c1.page_link(page, label=label)
    c2.write(note)

st.subheader("The smoothing rate")
c1, c2 = st.columns(2)
r = c1.number_input("r", value=-0.8, max_value=1.0, step=0.1, key="home.r")
k = c2.number_input("K", value=4, min_value=1, max_value=64, step=1, key="home.k")
st.info(describe_coefficients(r, int(k)))

active = [r for r in runs if r["state"] in ("queued", "running")]
if active:
    st.subheader("Active jobs")
    for r in active:
        st.write(f"{state_badge(r['state'])} **{r['run_id']}** "
                 f"{r['step'] or 0}/{r['total_steps'] or '?'}")
