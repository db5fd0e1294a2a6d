"""SGA Workbench: the Streamlit entry point. Pages live in pages/, logic in sga_core/.

The UI process imports no torch/transformers at start-up (SPEC 7).
"""

import streamlit as st

st.set_page_config(page_title="SGA Workbench", page_icon="🧽", layout="wide")

home = st.Page("pages/home.py", title="Home", icon="🏠", default=True)
nav = st.navigation({"Workbench": [home]})
nav.run()
