"""Once per server process: remove what killed processes left behind (partial project or
run folders, temporary files older than an hour) in the workspace and the runs folder."""

from __future__ import annotations

import streamlit as st


@st.cache_resource(show_spinner=False)
def clean_leftovers_once() -> list[str]:
    from sga_core import workbench as wb

    return [str(p) for p in wb.clean_workspace()]
