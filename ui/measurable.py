""""Can this experiment measure forgetting?" above the Results table: when the Original and
the Retained model cannot be told apart on the forget set, a banner says so (and what to do)
and the table ranks nothing; the comparison behind the verdict is one click away."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from sga_core import workbench as wb
from ui.show import plain


def _stamp(root: Path, rows: list[dict]) -> tuple:
    """What the verdict depends on: the reference rows' evaluation files and their times."""
    out = []
    for r in rows:
        if r.get("run") in ("Original", "Retained"):
            run = wb.RunFolder(Path(root) / r["run_id"])
            for p in (run.summary_path, run.per_sample_path):
                out.append((str(p), p.stat().st_mtime_ns if p.exists() else None))
    return tuple(out)


@st.cache_data(show_spinner=False, max_entries=32)
def _verdict(root: str, rows: list[dict], stamp: tuple) -> dict:
    return wb.table_verdict(rows, root)


def _fmt(v) -> str:
    return "—" if v is None else f"{v:.3g}"


def verdict(rows: list[dict], root) -> dict:
    """The verdict for these Results rows (cached until the two evaluations change)."""
    refs = [{"run": r["run"], "run_id": r["run_id"]} for r in rows
            if r.get("run") in ("Original", "Retained")]
    return _verdict(str(root), refs, _stamp(root, refs))


def show_verdict(v: dict) -> None:
    """The banner (not measurable), or a one-line note; the comparison in an expander."""
    if v["measurable"] is False:
        st.error("**Cannot measure forgetting.** " + plain(v["message"][0].upper() +
                                                          v["message"][1:]) + ".")
    elif v["measurable"] is None:
        st.caption(plain(f"Whether forgetting can be measured: no verdict ({v['reason']})."))
        return
    with st.expander("Original versus Retained on the forget set" +
                     (": they differ, forgetting can be measured" if v["measurable"] else "")):
        st.dataframe(pd.DataFrame([{
            "metric": r["label"], "Original": _fmt(r["original"]),
            "Retained": _fmt(r["retained"]), "Original − Retained": _fmt(r["diff"]),
            "95% interval": f"[{_fmt(r['lo'])}, {_fmt(r['hi'])}]", "rows": r["n"],
            "tells them apart": "yes" if r["separates"] else "no"} for r in v["rows"]]),
            hide_index=True, width="stretch", key="results.measurable")
        st.caption("Paired bootstrap over the forget rows (PrivLeak: forget and holdout rows). "
                   "A metric tells the two apart when the interval of the difference "
                   "excludes 0 on the side of memorisation (the Original higher on ROUGE, "
                   "probability, VerbMem and KnowMem; lower on PrivLeak). If none does, the "
                   "Original has not memorised the forget set, so no run can show forgetting "
                   "and no value is marked best. See docs/measurability.md.")
