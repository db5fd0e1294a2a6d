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

    def highlight(col):
        return ["font-weight: bold; background-color: #cfe8ff" if v in top.get(col.name, [])
                and df.loc[i, "run"] not in ("Original", "Retained") else ""
                for i, v in col.items()]

    st.caption(f"Runs of `{plain(group)}` (`python bench/paper_table.py`): every method at "
               "its defaults and SGA at the paper's r values, with the same training "
               "settings, seed and data order. " +
               ("The top-2 unlearning values of each column are highlighted, as in the "
                "paper, where they beat the rest beyond noise (fewer, or none, where they "
                "do not)."
                if rank else "Nothing is highlighted: forgetting cannot be measured here."))
    st.dataframe(df[["run"] + columns].style.apply(highlight, subset=columns).format(
        {c: "{:.4g}" for c in columns}, na_rep="—"), hide_index=True, width="stretch")
