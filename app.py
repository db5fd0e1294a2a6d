"""SGA Workbench: the Streamlit entry point. Pages live in pages/, logic in sga_core/.

The UI process imports no torch/transformers at start-up (SPEC 7): heavy work runs in job
subprocesses (training, evaluation) or lazily behind st.cache_resource.
"""

import streamlit as st

st.set_page_config(page_title="SGA Workbench", page_icon=":material/cleaning_services:",
                   layout="wide")

pages = {
    "Workbench": [
        st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
        st.Page("pages/data.py", title="Data", icon=":material/folder_open:"),
        st.Page("pages/normals.py", title="Normal answers", icon=":material/edit_note:"),
        st.Page("pages/rstar.py", title="Choose r (r*)", icon=":material/insights:"),
        st.Page("pages/train.py", title="Train", icon=":material/rocket_launch:"),
        st.Page("pages/runs.py", title="Runs", icon=":material/monitoring:"),
        st.Page("pages/results.py", title="Results", icon=":material/table_chart:"),
        st.Page("pages/tokens.py", title="Token probabilities", icon=":material/bar_chart:"),
        st.Page("pages/probe.py", title="Before / after probe", icon=":material/quiz:"),
    ],
}
st.navigation(pages).run()
