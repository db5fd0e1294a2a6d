"""The Data page's "Import a benchmark" panel: every registered benchmark
(:mod:`sga_core.projects.benchmarks`), its import options as a form from its Config, its text
files as uploads; a hub benchmark (TOFU, MUSE-News) from the hub when online, the local
Hugging Face cache, or a folder of its files. Layout only: the work is
``sga_core.workbench``'s."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.forms import dataclass_form
from ui.show import created_flash, panel, show_error

SOURCES = {"cache": "the local Hugging Face cache (offline)",
           "hub": "the Hugging Face hub (needs network)",
           "folder": "a folder with the benchmark's files"}


def _source_form() -> dict:
    """Where a hub benchmark's files come from (its Config's ``online`` / ``from_folder``)."""
    source = st.radio("from", list(SOURCES), format_func=SOURCES.get, key="bench.source")
    folder = st.text_input("folder", key="bench.folder",
                           help="files named <config>.json (TOFU: forget10_perturbed.json, "
                                "...) or <config>/<split>.jsonl (MUSE: raw/forget.jsonl, ...), "
                                "MUSE's published files (raw/forget.json, knowmem/"
                                "retain2_qa.json, ...), or the hub's parquet shards "
                                "<config>/<split>-00000-of-00002.parquet ...; one file per "
                                "split. Missing optional parts are listed after the import"
                           ) if source == "folder" else None
    return {"online": source == "hub", "from_folder": folder or None}


def import_panel(select_project) -> None:
    """The panel; ``select_project(name)`` makes a new project the current one."""
    with panel("Import a benchmark", "data.import_open"):
        st.caption("Writes a ready project: forget and retain data, the evaluation sets and "
                   "the benchmark's evaluation protocol (README: Evaluation protocols).")
        importers = {b.name: b for b in wb.benchmark_importers()}
        bench = st.radio("benchmark", list(importers), horizontal=True,
                         format_func=lambda b: importers[b].label, key="bench.kind")
        entry = importers[bench]
        name = st.text_input("project name (empty: tofu-forget10 / muse-news / muse-books)",
                             key="bench.name")
        labels = {s["name"]: s.get("label") or s["name"] for s in wb.field_specs(entry.config)}
        uploads = {}
        if entry.files:
            for col, field in zip(st.columns(len(entry.files)), entry.files, strict=True):
                uploads[field] = col.file_uploader(labels[field], type=["txt"],
                                                   key=f"bench.{field}")
        options = dataclass_form(entry.config, key=f"bench.{bench}", columns=2)
        if entry.from_hub:
            options |= _source_form()
        overwrite = st.checkbox("replace a project with the same name", key="bench.overwrite")
        if not st.button("Import", key="bench.go"):
            return
        if (entry.needs_name and not name) or not all(uploads.values()):
            st.error("Give " + ", ".join((["a project name"] if entry.needs_name else []) +
                                         [f"the {labels[f]}" for f in entry.files]) + ".")
            return
        try:
            with st.spinner("importing..."):
                p = wb.import_benchmark(
                    bench, name or None, options, overwrite=overwrite,
                    uploads={f: (u.name, u.getvalue()) for f, u in uploads.items()})
        except (wb.DataError, wb.ProjectError, ValueError, RuntimeError, OSError) as exc:
            show_error(exc, "Nothing was imported")
            return
        select_project(p.name)
        created_flash(p)
        st.rerun()
