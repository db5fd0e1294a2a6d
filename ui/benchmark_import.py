"""The Data page's "Import a benchmark" panel: TOFU or MUSE-News by name (the hub when
online, the local Hugging Face cache, or a folder of their files), or the copyright task from
your own book and retain text. Layout only: the work is ``sga_core.workbench``'s."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.show import created_flash, show_error

SOURCES = {"cache": "the local Hugging Face cache (offline)",
           "hub": "the Hugging Face hub (needs network)",
           "folder": "a folder with the benchmark's files"}


def _benchmark_form(bench: str) -> dict:
    c1, c2 = st.columns(2)
    split = c1.selectbox("forget split", ["forget10", "forget05", "forget01"],
                         key="bench.split") if bench == "tofu" else None
    source = c2.radio("from", list(SOURCES), format_func=SOURCES.get, key="bench.source")
    folder = st.text_input("folder", key="bench.folder",
                           help="files named <config>.json (TOFU: forget10_perturbed.json, "
                                "...) or <config>/<split>.jsonl (MUSE: raw/forget.jsonl, ...), or "
                                "the hub's parquet shards <config>/<split>-00000-of-00002"
                                ".parquet ...; one file per split"
                           ) if source == "folder" else None
    return {"variant": split, "online": source == "hub", "folder": folder}


def import_panel(select_project) -> None:
    """The panel; ``select_project(name)`` makes a new project the current one."""
    with st.expander("Import a benchmark"):
        st.caption("Writes a ready project: forget and retain data, the evaluation sets and "
                   "the benchmark's evaluation protocol (README: Evaluation protocols).")
        bench = st.radio("benchmark", list(wb.BENCHMARK_CHOICES), horizontal=True,
                         format_func=wb.BENCHMARK_CHOICES.get, key="bench.kind")
        name = st.text_input("project name (empty: tofu-forget10 / muse-news)",
                             key="bench.name")
        if bench == "copyright":
            c1, c2 = st.columns(2)
            book = c1.file_uploader("book (.txt)", type=["txt"], key="bench.book")
            retain = c2.file_uploader("retain corpus (.txt)", type=["txt"], key="bench.retain")
            c1, c2, c3 = st.columns(3)
            seg = c1.number_input("tokens per segment", 16, 4096, 512, key="bench.seg")
            prompt = c2.number_input("prompt tokens", 8, 4095, 200, key="bench.prompt")
            model = c3.text_input("tokenizer of", "embedded:smollm2", key="bench.model")
        else:
            opts = _benchmark_form(bench)
        overwrite = st.checkbox("replace a project with the same name", key="bench.overwrite")
        if not st.button("Import", key="bench.go"):
            return
        try:
            with st.spinner("importing..."):
                if bench == "copyright":
                    if not (book and retain and name):
                        st.error("Give a project name, the book and the retain text.")
                        return
                    p = wb.import_copyright_upload(
                        name, (book.name, book.getvalue()), (retain.name, retain.getvalue()),
                        model=model, segment_tokens=int(seg), prompt_tokens=int(prompt),
                        overwrite=overwrite)
                else:
                    p = wb.import_benchmark(bench, name or None, overwrite=overwrite, **opts)
        except (wb.DataError, wb.ProjectError, ValueError, RuntimeError, OSError) as exc:
            show_error(exc, "Nothing was imported")
            return
        select_project(p.name)
        created_flash(p)
        st.rerun()
