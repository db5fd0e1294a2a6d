"""The Runs page's Resume button: a failed or cancelled run (one stopped at its time limit is
failed) that has a checkpoint continues from it in its own folder, on the backend it ran on:
queued for the runner, or a run sent to SLURM resubmitted to SLURM (docs/long-runs.md,
docs/slurm.md)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from sga_core import workbench as wb
from ui.show import show_error


def resume_button(container, run_dir: Path, root: Path, state: dict) -> None:
    """Draw the button in ``container`` (enabled only when the run can be resumed) and
    queue the resume when it is pressed; ``state``: the run's progress as shown."""
    offer = wb.resume_offer(run_dir, state)
    why = (f"continue this run from {offer}, in its own folder" if offer else
           "for a failed or cancelled run with a checkpoint (training.save_every, or a "
           "stop by SIGTERM/SIGUSR1); a run stopped at its time limit is failed")
    if not container.button("Resume", key="runs.resume", disabled=offer is None, help=why):
        return
    try:
        done = wb.resume(run_dir, root)
    except (ValueError, OSError) as exc:  # the run changed since the page was drawn, or
        show_error(exc, "cannot resume")  # SLURM refused it, or is not offered here
        return
    st.session_state["runs.done"] = (
        f"Queued {run_dir.name} to resume from {offer}." if done.get("mode") == "queue" else
        f"Resubmitted {run_dir.name} to {wb.sent_to(done)} to resume from {offer}.")
    st.rerun()
