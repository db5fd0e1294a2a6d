"""Results helpers: which metric-versus-r plots exist and their points."""

from __future__ import annotations

from sga_core.report.ranking import best_values
from sga_core.report.sweeps import r_groups, sweep_series


def row(run, method, r, sweep=None, fq=None):
    return {"run": run, "method": method, "r": r, "sweep": sweep, "FQ": fq, "MU": 0.4}


ROWS = [row("Original", "-", None, fq=0.001), row("Retained", "-", None, fq=1.0),
        row("a", "sga", -0.8, fq=0.02), row("b", "sga", 0.0, fq=0.5),
        row("c", "sga", 0.4, "s1", 0.1), row("d", "sga", -2.0, "s1", 0.3),
        row("e", "npo", None, fq=0.2)]


def test_r_groups_offer_sweeps_and_methods_with_two_r_values():
    assert r_groups(ROWS) == ["s1", "all sga runs"]
    # one run per method is not a curve
    assert r_groups(ROWS[:3]) == []


def test_series_sorted_by_r_and_limited_to_the_group():
    s = sweep_series(ROWS, "s1")
    assert s["r"] == [-2.0, 0.4] and s["FQ"] == [0.3, 0.1]
    s = sweep_series(ROWS, "all sga runs")
    assert s["r"] == [-2.0, -0.8, 0.0, 0.4] and s["FQ"] == [0.3, 0.02, 0.5, 0.1]


def test_best_values_skip_original_and_retained():
    assert best_values(ROWS)["FQ"] == 0.5  # the Retained row's 1.0 is not a competitor


def test_display_names_are_readable_and_unique():
    from sga_core.report.table import display_names

    class P:  # a project that takes no published model: Prepare's are its reference rows
        name, meta = "demo", {}

    runs = [{"run_id": "demo-original", "method": "finetune", "r": None},
            {"run_id": "demo-retain-ref", "method": "finetune", "r": None},
            {"run_id": "sga-r-0p8-k4-20261122-010615", "method": "sga", "r": -0.8},
            {"run_id": "sga-r-0p8-k4-20261122-020000", "method": "sga", "r": -0.8},
            {"run_id": "sga-r0-k4-20261122-010055", "method": "sga", "r": 0.0},
            {"run_id": "npo-x", "method": "npo", "r": None}]
    assert display_names(runs, P()) == {
        "demo-original": "Original", "demo-retain-ref": "Retained",
        "sga-r-0p8-k4-20261122-010615": "sga r=-0.8 · 01:06:15",
        "sga-r-0p8-k4-20261122-020000": "sga r=-0.8 · 02:00:00",
        "sga-r0-k4-20261122-010055": "sga r=0", "npo-x": "npo"}
