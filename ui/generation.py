"""The settings form of normal-answer generation (backend, K, the backend's settings); the
backends and their settings come from the registry (:mod:`sga_core.normals.registry`) and
each backend's ``Config`` (:func:`ui.forms.dataclass_form`); the defaults are the project's
last generation, so a reload keeps them."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.forms import dataclass_form, kept
from ui.show import panel


def generation_settings(project) -> tuple[str, int, dict, str | None]:
    """Draw the form; returns (backend, K, backend options, API key or None)."""
    last = wb.last_generation(project)  # its settings are the defaults after a reload
    last_backend = last.get("backend")
    backends = {b.name: b for b in wb.normal_backends()}
    names = list(backends)
    backend = kept(st.selectbox, "normals.backend",
                   last_backend if last_backend in backends else names[0],
                   label="backend", options=names,
                   format_func=lambda b: f"{b}: {backends[b].description}")
    k = int(kept(st.number_input, "normals.k", project.k, min_value=2, max_value=wb.MAX_K,
                 label="K (forget answer + K-1 normal answers)"))
    entry = backends[backend]
    settings = set(entry.settings())
    values = dict(last.get("options") or {}) if last_backend == backend else {}
    values = {name: value for name, value in values.items() if name in settings}
    choices = {}
    if "template" in settings:  # the prompt templates on disk (assets/prompts, editable)
        templates = [t.name for t in wb.list_templates()]
        choices["template"] = templates
        if values.get("template") not in templates:
            values["template"] = wb.default_template(  # the project's kind, rows, protocol
                project.kind, project.forget(), (project.meta or {}).get("protocol"))
    key = f"normals.{backend}"
    options = dataclass_form(entry.config, values, key=key, columns=2, advanced=False,
                             choices=choices)
    if any(s.get("advanced") and not s.get("hidden") for s in wb.field_specs(entry.config)):
        with panel("more settings", f"{key}.more_open"):
            options |= dataclass_form(entry.config, values, key=key, columns=2, advanced=True)
    api_key = None
    if entry.api_key_env:  # never a setting: held in memory, handed to the job's environment
        api_key = st.text_input(f"API key (kept in memory only; empty = ${entry.api_key_env})",
                                type="password", key=f"{key}.api_key") or None
    return backend, k, options, api_key
