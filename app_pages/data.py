"""Data: upload forget and retain data (or use the demo) into a named project."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.benchmark_import import import_panel
from ui.context import current_project, select_project, show_damaged
from ui.eval_sets import eval_sets_section
from ui.field_map import mapping_for, valid
from ui.protocol import protocol_section
from ui.published import published_section
from ui.show import created_flash, demo_reset_flash, panel, plain, show_error, show_flash
from ui.study import forget_parts_note

st.title("Data")
show_flash()
project = current_project()
limit_mb = st.get_option("server.maxUploadSize")
types = [e[1:] for e in wb.SUPPORTED_EXTENSIONS]

with panel("New project from files", "data.new_open", project is None):
    st.write(f"Forget data is required, retain data is optional (needed by prepare, "
             f"retrieval normals and GradDiff/KL). Formats: "
             f"{', '.join(wb.SUPPORTED_EXTENSIONS)}; at most **{limit_mb} MB** per file. QA "
             f"rows need `question` and `answer` (TOFU files load as they are); text rows need "
             f"`text` or `prompt` + `continuation` (MUSE `gt` works too); a JSON list of "
             f"strings (MUSE's raw files) or a .txt of passages separated by blank lines is "
             f"text too. A file with other "
             f"field names (`prompt` / `response`, ...) gets a field-mapping step. Evaluation "
             f"sets (utility sets for MU) are added to the project below, once it exists.")
    name = st.text_input("project name", key="data.name",
                         help="lower-case letters, digits, '-' or '_'")
    kind = st.radio("data kind", ["auto", "qa", "text"], horizontal=True, key="data.kind")
    c1, c2 = st.columns(2)
    with c1:
        forget = st.file_uploader("forget data", type=types, key="data.forget")
        forget_map = mapping_for("forget", forget, kind)
    with c2:
        retain = st.file_uploader("retain data (optional)", type=types, key="data.retain")
        retain_map = mapping_for("retain", retain, kind, remembered=forget_map)
    overwrite = st.checkbox("replace a project with the same name", key="data.overwrite")
    mapped = valid(forget_map) and valid(retain_map)  # else its error is shown above
    if st.button("Create project", type="primary", key="data.create", disabled=not mapped,
                 help=None if mapped else "fix the field mapping first"):
        if not forget:
            st.error("Choose a forget data file first.")
        else:
            uploads = {role: (up.name, up.getvalue())
                       for role, up in (("forget", forget), ("retain", retain)) if up}
            try:
                p = wb.new_project(name, uploads, kind=kind, overwrite=overwrite,
                                   field_maps={"forget": forget_map, "retain": retain_map})
                select_project(p.name)
                created_flash(p)
                st.rerun()
            except (wb.DataError, wb.ProjectError) as exc:
                show_error(exc, "Nothing was imported")

import_panel(select_project)

c1, c2 = st.columns([1, 3])
if c1.button("Reset the demo project", key="data.demo"):
    st.session_state["data.demo.ask"] = True
if st.session_state.get("data.demo.ask"):
    # one click never replaces data: the reset is asked first, and the demo's normal-answer
    # history (the table it has as its newest version) is kept, restorable
    has_demo = "demo" in wb.list_projects()
    st.warning("Reset the demo project? Its data are written afresh and its current "
               "normal-answer table is set aside: every earlier version, and the table it has "
               "now, stay in its history (Normal answers: restore)." if has_demo else
               "Create the demo project?")
    y, n, _ = st.columns([1, 1, 4])
    if y.button("Yes, reset the demo", key="data.demo.yes", type="primary"):
        st.session_state.pop("data.demo.ask", None)
        try:
            demo = wb.create_demo_project(overwrite=True)
        except (wb.DataError, wb.ProjectError, OSError) as exc:
            show_error(exc, "The demo was not reset")
        else:
            select_project("demo")
            (demo_reset_flash if has_demo else created_flash)(demo)  # shown after the rerun
            st.rerun()
    if n.button("Cancel", key="data.demo.no"):
        st.session_state.pop("data.demo.ask", None)
        st.rerun()
c2.caption("The demo: 12 invented authors x 10 questions; the forget set is one author "
           "(Lucien Marchetti, whose prose is in a \"French\" style); two real-world sets "
           "for Model Utility.")

if project is None:
    show_damaged()
    st.stop()

meta = project.meta
st.subheader(f"Project: {plain(project.name)}")
forget_rows, retain_rows = project.forget(), project.retain()
m1, m2, m3, m4 = st.columns(4)
m1.metric("forget rows", len(forget_rows))
m2.metric("retain rows", len(retain_rows))
m3.metric("kind", project.kind)
m4.metric("extra eval sets", len(project.eval_sets()))
if meta.get("import_notes"):
    # what the import left out (VerbMem, retain data, ...) is shown, never folded away
    st.warning(plain(f"Import notes ({meta.get('benchmark')}): what this project lacks or "
                     "kept only in part"), icon=":material/warning:")
    st.text("\n".join(meta["import_notes"]))
st.caption(plain(f"from {project.sources} · created {meta.get('created_at')} · "
                 f"folder {project.path}"))
forget_parts_note(project)  # MUSE's scal / sust splits, when imported
for warning in project.data_warnings(forget_rows, retain_rows):
    st.warning(plain(warning))
for role, mapping in project.field_maps.items():
    if mapping and not role.startswith("eval:"):
        st.caption(plain(f"{role} fields mapped at import: " +
                         ", ".join(f"{wb.printable(s)} → {wb.printable(t)}"
                                   for s, t in mapping.items())))


def preview(rows: list[dict], n: int = 5):
    cols = ["question", "answer"] if project.kind == "qa" else ["prompt", "continuation"]
    return [{c: r.get(c) for c in cols} for r in rows[:n]]


st.markdown("**Forget data** (first rows)")
st.dataframe(preview(forget_rows), hide_index=True)
if retain_rows:
    st.markdown("**Retain data** (first rows)")
    st.dataframe(preview(retain_rows), hide_index=True)

protocol_section(project, wb.runs_root())
published_section(project, wb.runs_root())
eval_sets_section(project, wb.runs_root())
