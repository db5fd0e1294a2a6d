"""The paper's Table 1 on the Results page: shown when ``bench/paper_table.py`` has run every
method and SGA's r values on this project (one sweep group ``paper-table-<time>``)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from sga_core import workbench as wb
from ui.show import plain


def show_paper_table(rows: list[dict], root, kind: str, rank: bool = True,
                     skip=()) -> None:
    """The table for the newest paper-table group of ``rows`` (Results rows), or nothing.
    ``rank`` False: nothing highlighted (forgetting cannot be measured); ``skip``: the
    labels of columns that cannot show forgetting here (nothing highlighted in them)."""
    groups = wb.paper_groups(rows)
    if not groups:
        return
    st.subheader("The paper's Table 1")
    group = groups[0] if len(groups) == 1 else st.selectbox(
        "paper-table runs", groups, key="results.paper_group",
        help="each `python bench/paper_table.py` makes one group")
    table = wb.paper_table(rows, root, kind, group)
    if not table:
        st.caption("No run of this group is evaluated yet.")
        return
    columns = [c.label for c in wb.paper_columns(kind)]
    top = wb.top_values(table, kind, skip=skip, root=root) if rank else {}
    df = pd.DataFrame(table)

    seeds = max((r.get("n", 1) for r in table), default=1)
    shown = df[["run"] + columns].copy()
    if seeds > 1:  # each value as its mean with its interval over seeds
        for c in columns:
            shown[c] = [r.get(f"{c} (interval)") or ("—" if r.get(c) is None else
                                                      f"{r[c]:.4g}") for r in table]
        shown.insert(1, "seeds", [r.get("n", 1) for r in table])

    def highlight(col):
        return ["font-weight: bold; background-color: #cfe8ff" if df.loc[i, col.name] in
                top.get(col.name, []) and df.loc[i, "run"] not in ("Original", "Retained")
                else "" for i in col.index]

    st.caption(f"Runs of `{plain(group)}` (`python bench/paper_table.py`): every method at "
               "its defaults and SGA at the paper's r values, with the same training "
               "settings and data order" + (
                   f", each over up to {seeds} seeds (the mean [95% t interval over seeds] "
                   "sd). " if seeds > 1 else " and seed. ") +
               ("The top-2 unlearning values of each column are highlighted, as in the "
                "paper, where they beat the rest beyond noise (fewer, or none, where they "
                "do not)."
                if rank else "Nothing is highlighted: forgetting cannot be measured here."))
    styled = shown.style.apply(highlight, subset=columns)
    if seeds == 1:
        styled = styled.format({c: "{:.4g}" for c in columns}, na_rep="—")
    st.dataframe(styled, hide_index=True, width="stretch")
