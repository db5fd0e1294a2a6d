"""How a chart against the training step is drawn, on every page: whole-number step ticks
(never 0.5 steps), and a marker on each point while the points are few, so that a run of
one logged step still shows its value (a lone point of a line trace is invisible)."""

from __future__ import annotations

#: up to this many points a trace shows a marker on each
MARKED_POINTS = 30


def step_chart(fig, **layout):
    """``fig`` with its x axis as training steps: titled "step", ticks on whole steps, and
    markers on traces of few points; ``layout`` goes to ``update_layout``."""
    steps = [x for trace in fig.data for x in (trace.x or ()) if isinstance(x, (int, float))]
    for trace in fig.data:
        if trace.mode and len(trace.x or ()) <= MARKED_POINTS and "markers" not in trace.mode:
            trace.mode = f"{trace.mode}+markers"
    axis = {"title": "step", "tickformat": "d"}
    if steps and max(steps) - min(steps) <= 10:
        axis |= {"tick0": 0, "dtick": 1}  # few steps: one tick each, not 0.5 apart
    fig.update_layout(xaxis=axis, **layout)
    return fig
