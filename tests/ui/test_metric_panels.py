"""Metrics versus r (docs/spec.md#57-seeds-and-groups): one small panel per metric, each on
its own y scale, so PPL (near 28), PrivLeak (near 16) and VerbMem (near 0.1) are each
readable instead of flat lines at 0 on one shared axis."""

from __future__ import annotations

from sga_core.report.stats import t_interval
from ui.intervals import panels


def bands(values: dict[str, list[list[float]]]) -> dict:
    """r_bands-shaped input: per column, the seeds' values at each r."""
    out = {"r": [-0.8, 0.0, 0.4], "points": {}}
    for col, per_r in values.items():
        out[col] = [t_interval(v) for v in per_r]
        out["points"][col] = [(r, x, s) for r, v in zip(out["r"], per_r)
                              for s, x in enumerate(v)]
    return out


def test_each_metric_gets_its_own_panel_and_scale():
    b = bands({"VerbMem": [[0.01, 0.02], [0.1, 0.12], [0.14, 0.13]],
               "KnowMem forget": [[0.05], [0.06], [0.07]],
               "PrivLeak": [[16.0, 17.0], [5.0, 6.0], [-3.0, -1.0]],
               "PPL": [[28.0, 29.0], [30.0, 31.0], [27.0, 26.0]],
               "KnowMem retain": [[None], [None], [None]]})
    fig = panels(b, ["VerbMem", "KnowMem forget", "KnowMem retain", "PrivLeak", "PPL"], "r")
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["VerbMem", "KnowMem forget", "PrivLeak", "PPL"]  # no empty panel
    axes = {t.yaxis for t in fig.data}
    assert len(axes) == 4  # one y axis per metric: each on its own scale
    means = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.yaxis for t in means] == ["y", "y2", "y3", "y4"]
    assert fig.layout.yaxis.autorange is not False and fig.layout.yaxis.matches is None
    seeds = [t for t in fig.data if t.mode == "markers"]
    assert {t.name for t in seeds} == {"VerbMem seeds", "PrivLeak seeds", "PPL seeds"}


def test_original_fq_is_drawn_in_the_fq_panel_only():
    b = bands({"FQ": [[0.1], [0.3], [0.5]], "MU": [[0.5], [0.4], [0.3]]})
    fig = panels(b, ["FQ", "MU"], "r", original_fq=0.002)
    (line,) = [s for s in fig.layout.shapes]
    assert line.y0 == 0.002 and line.yref == "y"
    assert panels(bands({"FQ": [[None], [None], [None]]}), ["FQ"], "r") is None
