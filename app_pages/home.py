"""Home: what the workbench does, the steps in order, and where things stand."""

import streamlit as st

from sga_core import workbench as wb
from ui.context import current_project
from ui.damaged import warn_damaged
from ui.show import plain, state_badge

st.title("SGA Workbench")
st.write(
    "Make a language model forget some data while keeping the rest, with **Smoothed Gradient "
    "Ascent**: each forget answer is mixed with K-1 *normal* answers through a smoothing rate "
    "r (r = 0 is plain gradient ascent, negative r also learns the normal answers)."
)
project = current_project()
root = wb.runs_root()
runs = wb.list_runs(root)
mine = wb.runs_of(project, root)  # the project's (same forget rows), else every run
n_runs = sum(r["method"] not in ("finetune", None) for r in mine)
warn_damaged(runs)

st.subheader("Steps")
table = wb.normals_problems(project)[1] if project else ["no project"]
ready = project and wb.prepared_model(project, root) and wb.prepared_reference(project, root)
steps = [
    ("app_pages/data.py", "1. Data", f"project **{plain(project.name)}**: "
     f"{len(project.forget())} forget rows, {len(project.eval_sets())} evaluation sets"
     if project else "create a project"),
    ("app_pages/normals.py", "2. Normal answers",
     "complete" if project and not table else "generate and review them"),
    ("app_pages/train.py", "3. Prepare models", "original and retain reference ready" if ready
     else "fine-tune the model to unlearn (Train page)"),
    ("app_pages/rstar.py", "4. Choose r", "estimate r* from the gradients (optional)"),
    ("app_pages/train.py", "5. Train", f"{n_runs} unlearning run{'' if n_runs == 1 else 's'}"
     " of this project so far" if project else "launch unlearning runs"),
    ("app_pages/runs.py", "6. Watch", "live progress, losses and token probabilities"),
    ("app_pages/results.py", "7. Compare", "the paper's Table 1, metrics versus r, and how "
     "one token's probability (the demo's \"French\") moves under each r"),
]
for page, label, note in steps:
    c1, c2 = st.columns([1, 3])
    c1.page_link(page, label=label)
    c2.write(note)

st.subheader("The smoothing rate")
c1, c2 = st.columns(2)
r = c1.number_input("r", value=-0.8, max_value=1.0, step=0.1, key="home.r")
k = c2.number_input("K", value=4, min_value=1, max_value=64, step=1, key="home.k")
st.info(wb.describe_coefficients(r, int(k)))

active = [r for r in runs if r["state"] in ("queued", "running")]
if active:
    st.subheader("Active jobs")
    owners = wb.run_projects(active)
    for r in active:
        st.write(f"{state_badge(r['state'])} **{plain(r['run_id'])}** "
                 f"{r['step'] or 0}/{r['total_steps'] or '?'} · project "
                 f"{plain(owners.get(r['run_id'], '-'))}")
