"""Normal answers: generate them four ways, review and edit them by hand.

Every edit is saved to the project at once (atomically), and every save is a version in the
history that can be restored.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from sga_core import workbench as wb
from ui.context import project_note, require_project
from ui.generation import generation_settings
from ui.show import follow_job, job_progress, panel, plain, show_error

st.title("Normal answers")
project = require_project()
gen = wb.generation
forget = project.forget()
table, problems = wb.normals_problems(project)
reviewed = project.reviewed()

st.caption(":material/edit: **Edits are saved automatically** the moment you change a cell "
           "(each save is a version you can restore below).")
if table is None:
    st.info("No normal answers yet: generate them below (retrieval from the retain set, an "
            "OpenAI-compatible API, the local model, or \"I don't know\" templates).")
else:
    (st.warning if problems else st.success)(
        f"{wb.plural(len(table), 'normal answer')}, K = {table.k} ({table.k - 1} per forget row), "
        f"{len(reviewed)}/{len(forget)} rows reviewed. " +
        ("Not ready for training: " + "; ".join(problems[:4]) +
         (" ..." if len(problems) > 4 else "") if problems else "Complete."))

# ------------------------------------------------------------------ generation ---------------
with panel("Generate", f"normals.generate_open.{project.name}", table is None):
    backend, k, options, api_key = generation_settings(project)
    if table is not None:
        st.caption("Generating for all rows replaces the "
                   f"{wb.plural(len(table), 'answer')} in the table "
                   f"({sum(a.edited for a in table.answers)} edited by hand); the current "
                   "table stays in the history below, where it can be restored. Answers you "
                   "edit while it runs are kept.")
    project_note(project, "generates into")
    if st.button("Generate for all forget rows", type="primary", key="normals.generate"):
        try:
            gen.start(project, backend, k, options, api_key=api_key)
            st.rerun()
        except (RuntimeError, ValueError) as exc:
            show_error(exc, "cannot start")


def render_job(js: dict) -> None:
    if not js:
        return
    what = f"Generation ({js.get('backend')}, {gen.describe_rows(js.get('rows'))})"
    if js["state"] == "running":
        job_progress(js, what)
        if js.get("stage") == "loading the model":
            st.caption("The first load of a model takes a minute or two.")
    elif js["state"] == "failed":  # nothing was saved: the table is as it was
        show_error(js.get("error"), f"{what} failed")
    elif js["state"] == "completed":
        merged = js.get("outcome") == "merged"
        (st.warning if merged else st.success)(plain(
            f"{what} saved to the table: {js.get('message') or js.get('version', '?')} (the "
            "table before it is the previous version in the history). " +
            " · ".join(js.get("summary") or [])))
    for i, err in (js.get("errors") or {}).items() if js["state"] != "running" else ():
        st.warning(plain(f"forget row {i}: {err}"))


job = gen.status(project)
if not job.get("rows"):  # a one-row regeneration reports beside its row instead
    follow_job(lambda: gen.status(project), render_job)
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


def similarity(score) -> str:
    """A normal answer's cosine to its forget row as shown: "—" when it has none."""
    return "—" if score is None or pd.isna(score) else f"{score:.3f}"


row = st.selectbox("forget row", indices, format_func=label, key="normals.row")
src = forget[row]
c1, c2 = st.columns(2)
c1.markdown("**Question / prompt**")
c1.text(src.get("question") or src.get("prompt") or "")
c2.markdown("**Forget answer**")
c2.text(src.get("answer") or src.get("continuation") or "")

current = sorted((a for a in table.answers if a.forget_index == row), key=lambda a: a.k)
# typed columns: a row with no answer yet (a failed generation, a partial import) is an
# empty table that pandas would type as numbers, which a text column cannot edit
df = pd.DataFrame({"text": pd.Series([a.text for a in current], dtype="string"),
                   "source": pd.Series([a.source for a in current], dtype="string"),
                   # as text: an answer with no similarity (edited, "I don't know", other
                   # sources) shows "—", not a "None" that reads like a value
                   "score": pd.Series([similarity(a.score) for a in current],
                                      dtype="string")})
history = project.history()
version = history[0].stem if history else "none"  # a new saved version rebuilds the editor
st.caption("Double-click a cell to edit it, Enter to save. Add an answer with the + under the "
           "table; delete one by ticking its row on the left and pressing the bin icon.")
edited = st.data_editor(
    df, key=f"normals.editor.{row}.{version}", num_rows="dynamic", hide_index=True,
    width="stretch",
    column_config={"text": st.column_config.TextColumn("normal answer", width="large"),
                   "source": st.column_config.TextColumn(disabled=True),
                   "score": st.column_config.TextColumn(
                       "similarity", disabled=True,
                       help="cosine to the forget row (retrieval, also for the nearest "
                            "rows taken below the threshold); — for other sources, edited "
                            "answers and 'I don't know' answers")})
texts = ["" if pd.isna(t) else str(t) for t in edited["text"].tolist()]
if texts != [a.text for a in current]:
    wb.save_normals_row(project, row, texts, current)
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
    follow_job(lambda: gen.status(project), render_job)

with panel("All normal answers", "normals.all_open"):
    st.dataframe(pd.DataFrame([{**r, "score": similarity(r.get("score"))}
                               for r in table.to_rows()]), hide_index=True, column_config={
        "score": st.column_config.TextColumn(
            "similarity", help="cosine to the forget row (retrieval); — for other sources "
                               "and edited answers")})

# ------------------------------------------------------------------ import/export/history ---
st.subheader("Import, export, history")
c1, c2 = st.columns(2)
c1.download_button("Export JSONL", wb.dumps_jsonl(table.to_rows()),
                   file_name=f"{project.name}-normals.jsonl", mime="application/jsonl",
                   key="normals.export")
up = c2.file_uploader("Import JSONL (replaces the table; the old one stays in the history)",
                      type=["jsonl", "json", "csv", "parquet"], key="normals.import")
if up is not None and c2.button("Import", key="normals.do_import"):
    try:
        wb.import_normals(project, up.name, up.getvalue(), k=max(k, project.k))
        st.rerun()
    except wb.DataError as exc:
        show_error(exc, "Nothing was imported")

versions = project.history()
if versions:
    c1, c2 = st.columns([3, 1])
    # keyed by the newest version: a save made since starts the box afresh at the newest
    # (a kept pick would still show the version that was newest before the save)
    pick = c1.selectbox("saved versions (newest first)", [v.name for v in versions],
                        key=f"normals.version_pick.{versions[0].name}")
    if c2.button("Restore", key="normals.restore"):
        project.restore(pick)
        st.rerun()
