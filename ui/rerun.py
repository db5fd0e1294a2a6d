"""The Runs page's "Re-run with the same config" button. A project's prepared model (its
Original or Retained) is re-run in place, under its own run id, so that the project still
uses it: that replaces the folder, so it asks for a confirmation first."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from sga_core import workbench as wb
from ui.show import show_error


def rerun_button(container, run_dir: Path, root: Path, selected: str) -> None:
    """Draw the button (and, for a prepared model, its confirmation) in ``container``, and
    queue the re-run when it is pressed."""
    if wb.RunFolder(run_dir).published_path.exists():  # nothing was trained in it
        container.button("Re-run with the same config", key="runs.rerun", disabled=True,
                         help="this folder is the evaluation of a published model: nothing "
                              "was trained in it; evaluate it again instead")
        return
    role = wb.prepared_role(run_dir)
    replace = False
    if role:
        replace = container.checkbox(
            f"replace the {role} model", key=f"runs.confirm_rerun.{selected}",
            help=f"{selected} is the project's {role} model: a re-run takes its place, under "
                 "the same run id, so that the project keeps using it (the run there now is "
                 "deleted)")
    if not container.button("Re-run with the same config", key="runs.rerun",
                            disabled=bool(role) and not replace,
                            help=f"tick 'replace the {role} model' first" if role else
                            "queues a new run with this run's config and data snapshot"):
        return
    try:
        new = wb.rerun(run_dir, root, replace=replace)
    except Exception as exc:  # shown, never a crash
        show_error(exc, "cannot re-run")
        return
    st.session_state["runs.selected"] = st.session_state["runs.want"] = new.name
    st.session_state["runs.done"] = (
        f"Queued {new.name} in place of the {role} model, with the same config." if role
        else f"Queued {new.name}, a re-run of {selected} with the same config; it is the run "
             "shown above now.")
    st.rerun()
