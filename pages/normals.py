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
from sga_core.data import DataError, NormalAnswer, NormalTable
from sga_core.fileio import dumps_jsonl
from sga_core.normals import BACKEND_DESCRIPTIONS
from sga_core.normals import job as gen
from sga_core.normals.templates import list_templates
from sga_core.projects import jobs as bgjob

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
last = bgjob.spec(project, gen.NAME)  # the last generation's settings are the defaults
last_opts = last.get("options") or {}
templates = [t.name for t in list_templates()]
if last_opts.get("template") not in templates:
    last_opts.pop("template", None)
for key, value in (("normals.backend", last.get("backend")),
                   ("normals.template", last_opts.get("template")
                    or ("tofu_qa" if project.kind == "qa" else "copyright_continuation")),
                   ("normals.threshold", last_opts.get("threshold")),
                   ("normals.emb", last_opts.get("embedding_model")),
                   ("normals.local_model", last_opts.get("model")
                    if last.get("backend") == "local" else None),
                   ("normals.oa_model", last_opts.get("model")
                    if last.get("backend") == "openai" else None),
                   ("normals.base_url", last_opts.get("base_url"))):
    if value is not None and key not in st.session_state:
        st.session_state[key] = value

with st.expander("Generate", expanded=table is None):
    backends = ["retrieval", "local", "openai", "idk"]
    backend = st.selectbox("backend", backends, key="normals.backend",
                           format_func=lambda b: f"{b}: {BACKEND_DESCRIPTIONS.get(b, '')}")
    k = int(st.number_input("K (forget answer + K-1 normal answers)", min_value=2,
                            max_value=17, value=project.k, key="normals.k"))
    options: dict = {}
    api_key = None
    if backend == "retrieval":
        c1, c2 = st.columns(2)
        emb = c1.text_input("embedding model (empty = embedded all-MiniLM-L6-v2; or a folder "
                            "such as bge-large-en-v1.5)", key="normals.emb")
        options["embedding_model"] = emb or None
        st.session_state.setdefault("normals.threshold", 0.5)
        options["threshold"] = c2.slider("similarity threshold", 0.0, 1.0, step=0.01,
                                         key="normals.threshold")
    elif backend in ("openai", "local"):
        options["template"] = st.selectbox("prompt template (assets/prompts/, editable)",
                                           templates, key="normals.template")
        if backend == "openai":
            c1, c2 = st.columns(2)
            st.session_state.setdefault("normals.oa_model", "gpt-4o-mini")
            options["model"] = c1.text_input("model", key="normals.oa_model")
            options["base_url"] = c2.text_input(
                "base URL (empty = OpenAI; any OpenAI-compatible server: vLLM, Ollama, "
                "llama.cpp)", key="normals.base_url") or None
            api_key = st.text_input("API key (kept in memory only; empty = $OPENAI_API_KEY)",
                                    type="password", key="normals.api_key") or None
            options["max_concurrency"] = int(st.number_input(
                "concurrent requests", 1, 64, 4, key="normals.conc"))
        else:
            c1, c2 = st.columns(2)
            st.session_state.setdefault("normals.local_model", "embedded:smollm2")
            options["model"] = c1.text_input("local model", key="normals.local_model")
            options["max_new_tokens"] = int(c2.number_input("max new tokens", 8, 512, 64,
                                                            key="normals.max_new"))
    if table is not None:
        st.caption(f"Generating for all rows replaces the {len(table)} answers in the table "
                   f"({sum(a.edited for a in table.answers)} edited by hand); the current "
                   "table stays in the history below, where it can be restored.")
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
    what = gen.describe_rows(js.get("rows"))
    if js["state"] == "running":
        total = js.get("total") or 0
        stage = js.get("stage") or "starting"
        count = f"{js['done']}/{total} rows" if total else ""
        st.progress(js["done"] / total if total else 0.0,
                    text=f"Generating ({js.get('backend')}, {what}): {stage} {count}"
                         + (" (the first load of a model takes a minute or two)"
                            if stage == "loading the model" else ""))
    elif js["state"] == "failed":
        st.error(f"Generation ({js.get('backend')}, {what}) failed: {js.get('error')}")
    elif js["state"] == "completed":
        st.success(f"Generated ({js.get('backend')}, {what}) and saved to the table as "
                   f"version {js.get('version', '?')} (the table before it is the previous "
                   "version in the history). " + " · ".join(js.get("summary") or []))
        for i, err in (js.get("errors") or {}).items():
            st.warning(f"forget row {i}: {err}")
    if job.get("state") == "running" and js["state"] != "running":
        st.rerun(scope="app")  # show the new answers


if not job.get("rows"):  # a one-row regeneration reports beside its row instead
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
history = project.history()
version = history[0].stem if history else "none"  # a new saved version rebuilds the editor
st.caption("Double-click a cell to edit it, Enter to save. Add an answer with the + under the "
           "table; delete one by ticking its row on the left and pressing the bin icon.")
edited = st.data_editor(
    df, key=f"normals.editor.{row}.{version}", num_rows="dynamic", hide_index=True,
    width="stretch",
    column_config={"text": st.column_config.TextColumn("normal answer", width="large"),
                   "source": st.column_config.TextColumn(disabled=True),
                   "score": st.column_config.NumberColumn("similarity", disabled=True,
                                                          format="%.3f")})

texts = ["" if pd.isna(t) else str(t) for t in edited["text"].tolist()]
if texts != [a.text for a in current]:
    def edit_row(latest: NormalTable | None) -> NormalTable:
        base = latest or table  # the newest saved table (a job may have saved meanwhile)
        answers = [a for a in base.answers if a.forget_index != row]
        for j, text in enumerate(texts, start=1):
            old = current[j - 1] if j - 1 < len(current) else None
            if old is not None and old.text == text:
                answers.append(NormalAnswer(row, j, text, old.source, old.score, old.edited,
                                            old.updated_at))
            else:
                answers.append(NormalAnswer(row, j, text, "manual", None, True))
        return NormalTable(answers, max([base.k] + [a.k + 1 for a in answers]))

    project.update_normals(edit_row, reason=f"edit row {row}")
    st.toast(f"Saved row {row}")
    st.rerun()

c1, c2 = st.columns(2)
is_rev = row in reviewed
if c1.button("Unmark reviewed" if is_rev else "Mark reviewed ✓", key="normals.review"):
    project.set_reviewed([row], reviewed=not is_rev)
    st.rerun()
if c2.button(f"Regenerate this row ({backend})", key="normals.regen",
             help="with the backend and settings chosen under Generate above"):
    try:
        gen.start(project, backend, max(k, table.k), options, rows=[row], api_key=api_key)
        st.rerun()
    except (RuntimeError, ValueError) as exc:
        show_error(exc, "cannot start")
if job.get("rows"):
    job_panel()

with st.expander("All normal answers"):
    st.dataframe(pd.DataFrame(table.to_rows()), hide_index=True, column_config={
        "score": st.column_config.NumberColumn(
            "similarity", format="%.3f",
            help="cosine to the forget row (retrieval); empty for other sources")})

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
        st.rerun()
