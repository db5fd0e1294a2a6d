"""Shared UI pieces (not a page): the project picker and forms built from typed configs.

Forms come from the dataclasses' field metadata (help, bounds, choices), so a new option or
a new method needs no page edits.
"""

from __future__ import annotations

import streamlit as st

from sga_core.params import field_specs
from sga_core.projects import ProjectError, create_demo_project, list_projects, load_project


def _leave_pages_folder_mode() -> None:
    """Streamlit treats an app with a ``pages/`` folder beside its main script as an old-style
    (v1) multipage app until some run calls ``st.navigation``; a deep link to a fresh server
    would then run a page alone with a file-name sidebar. Switch to app.py's navigation and
    rerun (once per server). PagesManager is internal, hence the guard."""
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - a future Streamlit without it
        return
    # only on a session's first run, where no widget event can be lost by the rerun
    if PagesManager.uses_pages_directory and not st.session_state.get("_nav_fixed"):
        PagesManager.uses_pages_directory = False
        st.session_state["_nav_fixed"] = True
        st.rerun()


def current_project():
    """Render the sidebar project picker and return the chosen project (None if none).

    Every page calls this (rather than app.py once), so the picker's state survives on each
    page however it is run. On a first start the built-in demo project is created.
    """
    _leave_pages_folder_mode()
    names = list_projects()
    if not names:
        create_demo_project()
        names = list_projects()
    pending = st.session_state.pop("project_next", None)
    if pending in names:
        st.session_state["project"] = pending
    if st.session_state.get("project") not in names:
        st.session_state["project"] = names[0]
    name = st.sidebar.selectbox("Project", names, key="project")
    try:
        return load_project(name)
    except ProjectError:
        return None


def select_project(name: str) -> None:
    """Switch the sidebar picker to ``name`` on the next run (then call st.rerun())."""
    st.session_state["project_next"] = name


def _label(spec: dict) -> str:
    return spec.get("label") or spec["name"].replace("_", " ")


def _widget_value(spec: dict, val):
    """A config value as the widget holds it (lists as comma text, None as '')."""
    kind = spec["kind"]
    if kind == "list":
        return ", ".join(str(v) for v in val or [])
    if kind == "int":
        return int(val)
    if kind == "float":
        return float(val)
    if kind == "bool":
        return bool(val)
    return "" if val is None else val


def set_form_values(cls, values: dict, key: str, advanced: bool | None = None) -> None:
    """Write ``values`` into the widgets of ``dataclass_form(cls, key=key)`` before they are
    created (the way Streamlit lets code change widget values, browser included)."""
    for spec in field_specs(cls):
        if spec["name"] in values and (advanced is None or
                                       bool(spec.get("advanced")) == advanced):
            st.session_state[f"{key}.{spec['name']}"] = _widget_value(spec,
                                                                     values[spec["name"]])


def dataclass_form(cls, values: dict | None = None, key: str = "", columns: int = 3,
                   advanced: bool | None = None, exclude: tuple = ()) -> dict:
    """Render inputs for the fields of dataclass ``cls``; returns {field: value}.

    Session state is the single source of each widget's value (initialised from ``values``
    or the field default), so :func:`set_form_values` can change them later.
    ``advanced``: None = all fields, True/False = only fields with that flag.
    """
    values = values or {}
    out = {}
    specs = [s for s in field_specs(cls) if s["name"] not in exclude
             and (advanced is None or bool(s.get("advanced")) == advanced)]
    cols = st.columns(columns) if specs else []
    for i, spec in enumerate(specs):
        name, kind = spec["name"], spec["kind"]
        wkey = f"{key}.{name}"
        if wkey not in st.session_state:
            st.session_state[wkey] = _widget_value(spec, values.get(name, spec["default"]))
        common = {"label": _label(spec), "key": wkey, "help": spec.get("help")}
        with cols[i % columns]:
            if spec.get("choices"):
                out[name] = st.selectbox(options=list(spec["choices"]), **common)
            elif kind == "bool":
                out[name] = st.checkbox(**common)
            elif kind == "int":
                out[name] = int(st.number_input(
                    step=1, min_value=None if spec.get("min") is None else int(spec["min"]),
                    max_value=None if spec.get("max") is None else int(spec["max"]), **common))
            elif kind == "float":
                out[name] = float(st.number_input(format="%g", min_value=spec.get("min"),
                                                  max_value=spec.get("max"), **common))
            elif kind == "list":
                text = st.text_input(**common)
                out[name] = [v.strip() for v in text.split(",") if v.strip()]
            else:
                text = st.text_input(**common)
                out[name] = text if text or not spec["optional"] else None
    return out


def show_error(exc: Exception, what: str = "") -> None:
    st.error(f"{what}{': ' if what else ''}{exc}")


def state_badge(state: str | None) -> str:
    return {"queued": "⏳ queued", "running": "🏃 running", "completed": "✅ completed",
            "failed": "❌ failed", "cancelled": "⏹ cancelled",
            "diverged": "💥 diverged"}.get(state or "", state or "?")
