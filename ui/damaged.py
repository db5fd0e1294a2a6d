"""Runs with a damaged file: a warning naming the run, the file and what is wrong, while the
page renders everything else (``sga_core.runs.validate``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import streamlit as st

from sga_core import workbench as wb
from ui.show import plain


def damaged_text(run_id: str, reason) -> str:
    return f"run {run_id} is damaged: {reason}"


def warn_damaged(runs: list[dict]) -> None:
    """One warning per listed run whose files are damaged (``list_runs``' ``damaged``)."""
    for r in runs:
        if r.get("damaged"):
            st.warning(plain(damaged_text(r["run_id"], r["damaged"])),
                       icon=":material/broken_image:")


@contextlib.contextmanager
def unless_damaged(run_id: str) -> Iterator[None]:
    """Run the block; a damaged file it reads ends the block with a warning, not a crash."""
    try:
        yield
    except wb.Damaged as exc:
        st.warning(plain(damaged_text(run_id, exc)), icon=":material/broken_image:")
