"""The chosen project, in one place every page reads.

``app.py`` calls :func:`sidebar_picker` on every run, before the page runs: the picker lives
in the entry script (so Streamlit never drops it on a page switch), its value is kept in
session state under ``"project"`` and mirrored in the URL (``?project=NAME``), so a reload or
a shared link opens the same project. Pages call :func:`current_project` and never render a
picker of their own.
"""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.show import plain

KEY = "project"  # the chosen project's name: the one source of truth
WIDGET = "_project_picker"
NEXT = "_project_next"
DAMAGED = "_project_damaged"  # why the chosen project could not be loaded


def _picked() -> None:
    st.session_state[KEY] = st.session_state[WIDGET]


def sidebar_picker() -> str | None:
    """Render the sidebar project picker; returns the chosen project's name."""
    names = wb.ensure_projects()
    wanted = st.session_state.pop(NEXT, None)
    if wanted not in names:
        wanted = st.session_state.get(KEY)
    asked = None
    if wanted not in names:
        wanted = asked = st.query_params.get("project")
    if wanted not in names:
        wanted = names[0] if names else None
    st.session_state[KEY] = wanted
    if not names:
        return None
    if asked and asked != wanted:  # a link or a bookmark naming a project that is not here
        st.sidebar.warning(f"There is no project named {plain(asked)} (from the link); "
                           f"showing {plain(wanted)} instead.")
    st.session_state[WIDGET] = wanted
    st.sidebar.selectbox("Project", names, key=WIDGET, on_change=_picked,
                         help="Every page works on this project; the URL keeps it "
                              "(?project=...), so a reload or a shared link opens it again.")
    if st.query_params.get("project") != wanted:
        st.query_params["project"] = wanted
    return wanted


def current_project():
    """The chosen project (None when there is none or it cannot be loaded)."""
    name = st.session_state.get(KEY)
    if not name:
        return None
    try:
        project = wb.load_project(name)
    except wb.ProjectError as exc:
        st.session_state[DAMAGED] = str(exc)  # require_project says why
        return None
    st.session_state.pop(DAMAGED, None)
    return project


def show_damaged() -> bool:
    """When the chosen project could not be loaded (its project.json is damaged), say why;
    True when it did."""
    if not st.session_state.get(DAMAGED):
        return False
    st.error(plain(st.session_state[DAMAGED]))
    st.caption("Choose another project in the sidebar, or repair or remove that file.")
    return True


def require_project():
    """The chosen project (named under the page title), or a message and the end of the
    page."""
    project = current_project()
    if project is None:
        if not show_damaged():
            st.warning("Create or choose a project on the Data page first.")
        st.stop()
    st.caption(f":material/folder: project **{plain(project.name)}**")
    return project


def select_project(name: str) -> None:
    """Switch every page to project ``name`` from the next run on (then call st.rerun())."""
    st.session_state[NEXT] = name


def project_note(project, action: str = "acts on") -> None:
    """A line beside a page's action buttons naming the project they act on."""
    st.caption(f"{action} project **{plain(project.name)}**")
