"""The Data page's "Import a benchmark" panel: every registered benchmark
(:mod:`sga_core.projects.benchmarks`), its import options as a form from its Config, its text
files as uploads; a hub benchmark (TOFU, MUSE-News) from the hub when online, the local
Hugging Face cache, or a folder of its files. Layout only: the import runs as a job
(``sga_core.projects.import_job``), never in the server's process."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.forms import dataclass_form
from ui.show import created_flash, follow_job, job_progress, panel, show_error

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


STARTED = "bench.started"  # the started_at of the import this session started


def import_panel(select_project) -> None:
    """The panel; ``select_project(name)`` makes a new project the current one. The import
    runs as a job (:mod:`sga_core.projects.import_job`): a tokenizer cuts the copyright
    book and MUSE's long texts, and the UI process never loads one."""
    js = wb.import_job.status()
    with panel("Import a benchmark", "data.import_open", expanded=js.get("state") == "running"):
        st.caption("Writes a ready project: forget and retain data, the evaluation sets and "
                   "the benchmark's evaluation protocol (docs/benchmarks.md).")
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
        running = js.get("state") == "running"
        if st.button("Import", key="bench.go", disabled=running,
                     help="an import is running" if running else None):
            if (entry.needs_name and not name) or not all(uploads.values()):
                st.error("Give " + ", ".join(
                    (["a project name"] if entry.needs_name else []) +
                    [f"the {labels[f]}" for f in entry.files]) + ".")
            else:
                try:
                    wb.import_job.start(
                        bench, name or None, options, overwrite=overwrite,
                        uploads={f: (u.name, u.getvalue()) for f, u in uploads.items()})
                except (wb.DataError, wb.ProjectError, ValueError, RuntimeError,
                        OSError) as exc:
                    show_error(exc, "Nothing was imported")
                else:
                    st.session_state[STARTED] = wb.import_job.status().get("started_at")
                    st.rerun()
        follow_job(wb.import_job.status, lambda status: _render(status, select_project))


def _render(js: dict, select_project) -> None:
    """The import job as this session sees it: its stage while it runs; once the import
    this session started ends, the new project (chosen) or the importer's message."""
    mine = js.get("started_at") and js.get("started_at") == st.session_state.get(STARTED)
    if js.get("state") == "running":  # the bar: done of total of the stage it is in
        job_progress(js, f"Importing {js.get('benchmark', '')}")
        return
    if not mine:
        return
    if js.get("state") == "failed":
        show_error(js.get("error") or "the import stopped", "Nothing was imported")
    elif js.get("state") == "completed" and js.get("created"):
        st.session_state.pop(STARTED, None)
        try:
            project = wb.load_project(js["created"])
        except wb.ProjectError as exc:
            show_error(exc, "The import ended, but")
            return
        select_project(project.name)
        created_flash(project)
        st.rerun(scope="app")
