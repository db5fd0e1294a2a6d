"""Normal answers: generate them four ways, review and edit them by hand.

Every edit is saved to the project at once (atomically), and every save is a version in the
history that can be restored.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from pages._common import current_project, show_error
from sga_core import bgjob
from sga_core.data import DataError, NormalAnswer, NormalTable
from sga_core.fileio import dumps_jsonl
from sga_core.normals import BACKEND_DESCRIPTIONS
from sga_core.normals import job as gen
from sga_core.normals.templates import list_templates

st.title("Normal answers")
project = current_project()
if project is None:
    st.stop()
forget = project.forget()
table = project.normals()
reviewed = project.reviewed()

st.caption("✏️ **Edits are saved automatically** the moment you change a cell (each save is a "
           "version you can restore below).")
if table is None:
    st.info("No normal answers yet: generate them below (retrieval from the retain set, an "
            "OpenAI-compatible API, the local model, or \"I don't know\" templates).")
else:
    problems = table.problems(len(forget))
    (st.warning if problems else st.success)(
        f"{len(table)} normal answers, K = {table.k} ({table.k - 1} per forget row), "
        f"{len(reviewed)}/{len(forget)} rows reviewed. " +
        ("Not ready for training: " + "; ".join(problems[:4]) +
         (" ..." if len(problems) > 4 else "") if problems else "Complete."))

# ------------------------------------------------------------------ generation ---------------
with st.expander("Generate", expanded=table is None):
    backends = ["retrieval", "local", "openai", "idk"]
    backend = st.selectbox("backend", backends, key="normals.backend",
                           format_func=lambda b: f"{b}: {BACKEND_DESCRIPTIONS.get(b, '')}")
    k = int(st.number_input("K (forget answer + K-1 normal answers)", min_value=2,
                            max_value=17, value=project.k, key="normals.k"))
    options: dict = {}
    api_key = None
    templates = [t.name for t in list_templates()]
    if backend == "retrieval":
        c1, c2 = st.columns(2)
        emb = c1.text_input("embedding model (empty = embedded all-MiniLM-L6-v2; or a folder "
                            "such as bge-large-en-v1.5)", key="normals.emb")
        options["embedding_model"] = emb or None
        options["threshold"] = c2.slider("similarity threshold", 0.0, 1.0, 0.5, 0.01,
                                         key="normals.threshold")
    elif backend in ("openai", "local"):
        options["template"] = st.selectbox("prompt template (assets/prompts/, editable)",
                                           templates, key="normals.template")
        if backend == "openai":
            c1, c2 = st.columns(2)
            options["model"] = c1.text_input("model", "gpt-4o-mini", key="normals.oa_model")
            options["base_url"] = c2.text_input(
                "base URL (empty = OpenAI; any OpenAI-compatible server: vLLM, Ollama, "
                "llama.cpp)", key="normals.base_url") or None
            api_key = st.text_input("API key (kept in memory only; empty = $OPENAI_API_KEY)",
                                    type="password", key="normals.api_key") or None
            options["max_concurrency"] = int(st.number_input(
                "concurrent requests", 1, 64, 4, key="normals.conc"))
        else:
            c1, c2 = st.columns(2)
            options["model"] = c1.text_input("local model", "embedded:smollm2",
                                             key="normals.local_model")
            options["max_new_tokens"] = int(c2.number_input("max new tokens", 8, 512, 64,
                                                            key="normals.max_new"))
    if st.button("Generate for all forget rows", type="primary", key="normals.generate"):
        try:
            gen.start(project, backend, k, options, api_key=api_key)
            st.rerun()
        except (RuntimeError, ValueError) as exc:
            show_error(exc, "cannot start")

job = gen.status(project)


@st.fragment(run_every=1.0 if job.get("state") == "running" else None)
def job_panel():
    js = gen.status(project)
    if not js:
        return
    rows = js.get("rows")
    what = f"rows {rows}" if rows else "all rows"
    if js["state"] == "running":
        total = js.get("total") or 0
        st.progress(js["done"] / total if total else 0.0,
                    text=f"generating ({js.get('backend')}, {what}): {js['done']}/{total or '?'}")
    elif js["state"] == "failed":
        st.error(f"Generation failed: {js.get('error')}")
    elif js["state"] == "completed" and not js.get("applied"):
        st.success(f"Generated ({js.get('backend')}, {what}). " +
                   " · ".join(js.get("summary") or []))
        for i, err in (js.get("errors") or {}).items():
            st.warning(f"forget row {i}: {err}")
        if st.button("Apply the generated answers to the table", key="normals.apply"):
            new = gen.result(project)
            merged = gen.merge(project.normals(), new, rows)
            project.save_normals(merged, reason=f"generate {js.get('backend')}")
            project.update_meta(k=merged.k)
            bgjob.update(project, gen.NAME, applied=True)
            st.session_state["normals.version"] = st.session_state.get("normals.version", 0) + 1
            st.rerun(scope="app")
    if job.get("state") == "running" and js["state"] != "running":
        st.rerun(scope="app")


job_panel()

if table is None:
    st.stop()

# ------------------------------------------------------------------ review ------------------
st.subheader("Review and edit")
only_open = st.toggle("only rows not yet reviewed", key="normals.only_open")
indices = [i for i in range(len(forget)) if not (only_open and i in reviewed)]
if not indices:
    st.success("Every row is reviewed.")
    st.stop()


def label(i: int) -> str:
    q = forget[i].get("question") or forget[i].get("prompt") or forget[i].get("text", "")
    return f"{'✓' if i in reviewed else '·'} {i}: {q[:80]}"


row = st.selectbox("forget row", indices, format_func=label, key="normals.row")
src = forget[row]
c1, c2 = st.columns(2)
c1.markdown("**Question / prompt**")
c1.write(src.get("question") or src.get("prompt") or "")
c2.markdown("**Forget answer**")
c2.write(src.get("answer") or src.get("continuation") or "")

current = sorted((a for a in table.answers if a.forget_index == row), key=lambda a: a.k)
df = pd.DataFrame({"text": [a.text for a in current], "source": [a.source for a in current],
                   "score": [a.score for a in current]})
version = st.session_state.get("normals.version", 0)
edited = st.data_editor(
    df, key=f"normals.editor.{row}.{version}", num_rows="dynamic", hide_index=True,
    width="stretch",
    column_config={"text": st.column_config.TextColumn("normal answer", width="large"),
                   "source": st.column_config.TextColumn(disabled=True),
                   "score": st.column_config.NumberColumn("similarity", disabled=True,
                                                          format="%.3f")})

texts = ["" if pd.isna(t) else str(t) for t in edited["text"].tolist()]
if texts != [a.text for a in current]:
    answers = [a for a in table.answers if a.forget_index != row]
    for j, text in enumerate(texts, start=1):
        old = current[j - 1] if j - 1 < len(current) else None
        if old is not None and old.text == text:
            answers.append(NormalAnswer(row, j, text, old.source, old.score, old.edited,
                                        old.updated_at))
        else:
            answers.append(NormalAnswer(row, j, text, "manual", None, True))
    new_k = max([table.k] + [a.k + 1 for a in answers])
    project.save_normals(NormalTable(answers, new_k), reason=f"edit row {row}")
    st.session_state["normals.version"] = version + 1
    st.toast(f"Saved row {row}")
    st.rerun()

c1, c2 = st.columns(2)
is_rev = row in reviewed
if c1.button("Unmark reviewed" if is_rev else "Mark reviewed ✓", key="normals.review"):
    project.set_reviewed([row], reviewed=not is_rev)
    st.rerun()
if c2.button(f"Regenerate this row ({st.session_state.get('normals.backend', 'retrieval')})",
             key="normals.regen"):
    try:
        gen.start(project, backend, max(k, table.k), options, rows=[row], api_key=api_key)
        st.rerun()
    except (RuntimeError, ValueError) as exc:
        show_error(exc, "cannot start")

with st.expander("All normal answers"):
    st.dataframe(pd.DataFrame(table.to_rows()), hide_index=True)

# ------------------------------------------------------------------ import/export/history ---
st.subheader("Import, export, history")
c1, c2 = st.columns(2)
c1.download_button("Export JSONL", dumps_jsonl(table.to_rows()), file_name=
                   f"{project.name}-normals.jsonl", mime="application/jsonl",
                   key="normals.export")
up = c2.file_uploader("Import JSONL (replaces the table; the old one stays in the history)",
                      type=["jsonl", "json", "csv", "parquet"], key="normals.import")
if up is not None and c2.button("Import", key="normals.do_import"):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(up.name).name
        path.write_bytes(up.getvalue())
        try:
            imported = NormalTable.load(path)
            project.save_normals(imported, reason=f"import {up.name}")
            st.session_state["normals.version"] = version + 1
            st.rerun()
        except DataError as exc:
            st.error(f"Nothing was imported. {exc}")

versions = project.history()
if versions:
    c1, c2 = st.columns([3, 1])
    pick = c1.selectbox("saved versions (newest first)", [v.name for v in versions],
                        key="normals.version_pick")
    if c2.button("Restore", key="normals.restore"):
        project.restore(pick)
        st.session_state["normals.version"] = version + 1
        st.rerun()
