"""SGA Workbench: the Streamlit entry point. The pages live in app_pages/, shared Streamlit
pieces in ui/, the logic in sga_core/ (through the sga_core.workbench facade).

The UI process imports no torch/transformers (docs/spec.md#7-engineering-rules,
docs/decisions/007-ui-never-loads-a-model.md): heavy work runs in job subprocesses (training,
evaluation, generation). The project picker is drawn here, in the entry script, so every page shares
it and a page switch never resets it.
"""

import streamlit as st

from sga_core.data import DataError
from ui.context import sidebar_picker
from ui.show import plain
from ui.startup import clean_leftovers_once

st.set_page_config(page_title="SGA Workbench", page_icon=":material/cleaning_services:",
                   layout="wide")
clean_leftovers_once()

pages = {
    "Workbench": [
        st.Page("app_pages/home.py", title="Home", icon=":material/home:", default=True),
        st.Page("app_pages/data.py", title="Data", icon=":material/folder_open:"),
        st.Page("app_pages/normals.py", title="Normal answers", icon=":material/edit_note:"),
        st.Page("app_pages/rstar.py", title="Choose r (r*)", icon=":material/insights:"),
        st.Page("app_pages/train.py", title="Train", icon=":material/rocket_launch:"),
        st.Page("app_pages/runs.py", title="Runs", icon=":material/monitoring:"),
        st.Page("app_pages/results.py", title="Results", icon=":material/table_chart:"),
        st.Page("app_pages/tokens.py", title="Token probabilities", icon=":material/bar_chart:"),
        st.Page("app_pages/probe.py", title="Before / after probe", icon=":material/quiz:"),
    ],
}
page = st.navigation(pages)
sidebar_picker()
try:
    page.run()
except DataError as exc:  # one of the project's own files, damaged after it was written
    st.error(plain(f"A file of this project cannot be read: {exc}"))
    st.caption("Repair the file, or create the project again on the Data page (New project "
               "from files, with 'replace a project with the same name').")
