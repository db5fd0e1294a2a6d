"""The Train page's normal answers: the project's table when it is complete, else, for a
method that can take them, generated "I don't know" answers on request (the demo's default),
or what is missing and how to get it."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.forms import kept
from ui.show import as_list, plain


def normals_choice(project, cls, method_args: dict) -> str | None:
    """The normals file a run of method class ``cls`` trains on (None: none is ready)."""
    if "normals" not in cls.needs:
        return None
    table, problems = wb.normals_problems(project, method_args.get("k", 1))
    if not problems:
        st.caption(f"Normal answers: {project.normals_path.name} (K={table.k}, complete)")
        return str(project.normals_path)
    if not cls.idk_normals:  # refusals cannot stand in (AltPO prefers alternates)
        st.warning(wb.missing_data(project, cls.name, method_args, None))
        return None
    # the demo ships without normals: its figures use "I don't know" answers
    if kept(st.checkbox, "train.idk_fallback", project.is_demo,
            label="use generated \"I don't know\" normal answers instead"):
        st.caption("Training with generated \"I don't know\" normal answers (the project's "
                   "own are not ready: " + plain("; ".join(problems[:2])) + "; the Normal "
                   "answers page generates and edits them).")
        return wb.idk_fallback(project, method_args.get("k", 2))
    st.warning("Normal answers are not ready:\n" + as_list(problems, 5) + "\n\nFix them on "
               "the Normal answers page, or tick the box above to train with generated \"I "
               "don't know\" answers.")
    return None
