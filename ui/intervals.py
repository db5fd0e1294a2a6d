"""Results over seeds: the table pooled per configuration (mean, 95% interval, sd, n), metric
versus r with error bars and the seeds themselves, and the r suggestion with how sure it is.
Used by the Results page and the r* page."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from sga_core import workbench as wb
from ui.show import plain

INTERVAL_NOTE = ("Per configuration (the runs one launch made over several seeds): the mean, "
                 "its 95% interval **[low, high]** = mean ± t(0.975, n−1)·sd/√n (Student t "
                 "over seeds: with 3-5 seeds a normal or bootstrap interval would be too "
                 "narrow), the standard deviation **sd** across seeds and **n** seeds. One "
                 "run alone has no interval.")


def pooled_table(rows: list[dict], kind: str, shown=()) -> None:
    """The Results table with one row per configuration, when some have several seeds;
    ``shown``: the columns shown on request above (each attack's AUC and PrivLeak, ...)."""
    if not wb.has_seed_groups(rows):
        return
    st.subheader("Per configuration, over seeds")
    st.caption(INTERVAL_NOTE)
    df = pd.DataFrame(wb.group_display(rows, kind, shown))
    for col, fmt in (("r", "{:g}"), ("K", "{:.0f}")):  # text: "—" where it does not apply
        df[col] = [("—" if v is None or pd.isna(v) else fmt.format(v)) for v in df[col]]
    st.dataframe(df, hide_index=True, width="stretch", key="results.pooled")


def downloads(rows: list[dict], kind: str, name: str) -> None:
    """CSV and JSON with one row per seed (level 'seed') and one per configuration (level
    'group': each metric's mean, sd, 95% bounds and n), MU's components included."""
    out = wb.export_rows(rows, kind)
    c1, c2 = st.columns(2)
    c1.download_button("Download CSV", wb.export_csv(rows, kind),
                       f"{name}-results.csv", "text/csv", key="results.csv",
                       help="one row per run (level seed) and one per configuration "
                            "(level group: mean, sd, 95% interval, n)")
    c2.download_button("Download JSON", json.dumps(out, indent=1), f"{name}-results.json",
                       "application/json", key="results.json")


def _error_bars(ivs) -> dict | None:
    if not any(iv.lo is not None for iv in ivs):
        return None
    return dict(type="data", symmetric=False,
                array=[(iv.hi - iv.mean) if iv.lo is not None else 0 for iv in ivs],
                arrayminus=[(iv.mean - iv.lo) if iv.lo is not None else 0 for iv in ivs])


PANEL_COLUMNS = 3  # small panels per row


def panels(bands: dict, columns: list[str], x_name: str, original_fq: float | None = None,
           names: dict[str, str] | None = None):
    """One small panel per metric, each on its own y scale (PPL near 28, PrivLeak near 16 and
    VerbMem near 0.1 on one axis made the forgetting metrics flat lines): the mean per r with
    its 95% interval over seeds, each seed a faint dot. A panel's scale spans at least its
    metric's negligible gap (``names``: label -> summary key; :func:`wb.axis_range`), so a
    difference of 0.00007 is not stretched to the full height. None when no metric has a
    value."""
    from plotly.subplots import make_subplots

    shown = [c for c in columns if any(iv.mean is not None for iv in bands[c])]
    if not shown:
        return None
    n_rows = -(-len(shown) // PANEL_COLUMNS)
    fig = make_subplots(rows=n_rows, cols=min(PANEL_COLUMNS, len(shown)), subplot_titles=shown,
                        horizontal_spacing=0.08, vertical_spacing=0.16 if n_rows > 1 else 0.1)
    for i, col in enumerate(shown):
        at = dict(row=i // PANEL_COLUMNS + 1, col=i % PANEL_COLUMNS + 1)
        ivs = bands[col]
        color = f"hsl({i * 360 // max(len(shown), 1)}, 65%, 45%)"
        fig.add_scatter(x=bands["r"], y=[iv.mean for iv in ivs], mode="lines+markers",
                        name=col, error_y=_error_bars(ivs), line=dict(color=color),
                        customdata=[[iv.n] for iv in ivs], showlegend=False,
                        hovertemplate=f"{col}<br>{x_name}=%{{x}}<br>mean %{{y:.4g}}"
                                      "<br>n=%{customdata[0]}<extra></extra>", **at)
        pts = bands["points"][col]
        if any(iv.n > 1 for iv in ivs):
            fig.add_scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="markers",
                            marker=dict(color=color, size=5, opacity=0.35),
                            showlegend=False, name=f"{col} seeds",
                            text=[f"seed {p[2]}" for p in pts],
                            hovertemplate=f"{col} %{{text}}: %{{y:.4g}}<extra></extra>", **at)
        if col == "FQ" and original_fq is not None:
            fig.add_hline(y=original_fq, line_dash="dot", annotation_text="Original",
                          **at)
        fig.update_xaxes(title_text=x_name, **at)
        span = wb.axis_range([v for iv in ivs for v in (iv.mean, iv.lo, iv.hi)] +
                             [p[1] for p in pts], (names or {}).get(col, col))
        if span is not None:
            fig.update_yaxes(range=span, **at)
    fig.update_layout(height=230 * n_rows + 40, margin=dict(l=10, r=10, t=40, b=10))
    return fig


def metric_vs_r(rows: list[dict], kind: str, key: str, original_fq: float | None = None,
                verdict: dict | None = None) -> None:
    """Pick a sweep (or all runs of a method); plot each metric's mean per r with its 95%
    interval over seeds and every seed as a faint dot, one panel per metric; suggest r
    with its uncertainty, unless the project's ``verdict`` (:func:`ui.measurable.verdict`,
    the one the page's banner shows) says forgetting cannot be measured."""
    groups = wb.r_groups(rows)
    if not groups:
        st.caption("Appears once two runs of a method at different r, and otherwise the same "
                   "settings, are evaluated (or a sweep: Train page → Sweep over r).")
        return
    sweep = st.selectbox("runs", groups, key=f"{key}.sweep",
                         help="a sweep, or all runs of one method; runs are grouped only "
                              "when every setting but r (and the seed) matches (a group's "
                              "name says what sets it apart)")
    bands = wb.r_bands(rows, sweep, kind)
    x_name = wb.sweep_param_of(rows, sweep)  # r for SGA, alpha for Task Vector and WHP
    specs = wb.row_columns(rows, kind)
    columns = [c.label for c in specs]
    fig = panels(bands, columns, x_name, original_fq, {c.label: c.name for c in specs})
    if fig is not None:
        st.plotly_chart(fig, key=f"{key}.plot")
    n = [iv.n for iv in bands[columns[0]]] if columns else []
    st.caption("Lines: the mean per r; bars: its 95% t-interval over seeds; faint dots: "
               "each seed." if n and max(n) > 1 else
               "One run per r: no spread to show. Repeat over seeds (Train page: repeat "
               "over seeds) to see whether the differences are more than noise.")
    labels = [c for c in columns if any(iv.mean is not None for iv in bands[c])]
    if labels:
        metric = st.selectbox("suggest r by", labels, key=f"{key}.metric")
        text = wb.suggestion_text(wb.suggest_r(rows, sweep, metric, kind), verdict)
        (st.info if wb.can_rank(verdict) else st.warning)(plain(text))
