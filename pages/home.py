"""Home: what the workbench does and where the runs are."""

import streamlit as st

from sga_core.losses import describe_coefficients
from sga_core.runs import list_runs, runs_root

st.title("SGA Workbench")
st.write(
    "Make a language model forget some data while keeping the rest, with **Smoothed Gradient "
    "Ascent**: each forget answer is mixed with K-1 normal answers through a smoothing rate r "
    "(r = 0 is plain gradient ascent)."
)
c1, c2 = st.columns(2)
r = c1.number_input("smoothing rate r", value=-0.8, max_value=1.0, step=0.1)
k = c2.number_input("K", value=4, min_value=1, max_value=64, step=1)
st.info(describe_coefficients(r, int(k)))

st.subheader("Runs")
rows = list_runs()
if rows:
    st.dataframe(rows, hide_index=True)
else:
    st.write(f"No runs yet in `{runs_root()}`. From a shell: `python -m sga_core prepare --demo`"
             " then `python -m sga_core train --demo --r -0.8 --k 4`.")
