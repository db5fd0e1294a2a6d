""""Can this experiment measure forgetting?" above the Results table: when the Original and
the Retained model cannot be told apart on the forget set, a banner says so (and what to do)
and the table ranks nothing; when only some metrics tell them apart, a note names the others,
which are not ranked; the comparison behind the verdict is one click away."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from sga_core import workbench as wb
from ui.show import plain


def stamp(root: Path, rows: list[dict]) -> tuple:
    """What a comparison of these rows' runs depends on: their evaluation files and their
    times (a cache key)."""
    out = []
    for r in rows:
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
    return _verdict(str(root), refs, stamp(root, refs))


DECIDES = {"separates": "tells them apart",
           "rules out": "no memorisation measurable by this metric",
           "too wide": "not enough rows to tell"}


def show_verdict(v: dict) -> None:
    """The verdict, computed once for the page (:func:`verdict`): a banner when forgetting
    cannot be measured (not memorised, or too few rows to tell), a line saying which
    metrics decided it otherwise; the comparison in an expander."""
    detail = plain(wb.verdict_detail(v))
    if v["measurable"] is False:
        st.error("**Cannot measure forgetting.** " + detail)
    elif v["measurable"] is None:
        st.caption(plain(wb.verdict_text(v)))
        return
    elif wb.unranked(v):  # measured by some metrics only: the others are not ranked
        st.info("**Forgetting can be measured.** " + detail)
    else:
        st.caption("**Forgetting can be measured.** " + detail)
    with st.expander("Original versus Retained on the forget set" +
                     (": they differ, forgetting can be measured" if v["measurable"] else ""),
                     key="results.measurable_open", on_change="rerun"):
        st.dataframe(pd.DataFrame([{
            "metric": r["label"], "Original": _fmt(r["original"]),
            "Retained": _fmt(r["retained"]), "Original − Retained": _fmt(r["diff"]),
            "95% interval": f"[{_fmt(r['lo'])}, {_fmt(r['hi'])}]", "rows": r["n"],
            "tells them apart": "yes" if r["separates"] else "no",
            "decides": DECIDES[r["decides"]]} for r in v["rows"]]),
            hide_index=True, width="stretch", key="results.measurable")
        st.caption("Paired bootstrap over the forget rows (MIA AUC and PrivLeak: forget and "
                   "holdout rows; PrivLeak against the Retained's own AUC, so the Retained's "
                   "is 0). A metric tells the two apart when the whole interval of the difference "
                   "lies beyond a negligible gap (0.05 on 0-1 metrics, 10 PrivLeak points, "
                   "10% of the Retained's perplexity) on the side of memorisation (the "
                   "Original higher on ROUGE, probability, VerbMem, KnowMem and MIA AUC; "
                   "lower on PrivLeak and forget perplexity); an interval inside the gap, or "
                   "on the other side, measures no memorisation; one that straddles the gap "
                   "is not enough rows to tell. If none tells them apart, no run can show "
                   "forgetting (every interval rules it out: the Original has not memorised; "
                   "some interval too wide: not enough rows to tell), and no value is marked "
                   "best nor any r suggested; if some do, the others still mark no best and "
                   "suggest no r. See docs/measurability.md.")
