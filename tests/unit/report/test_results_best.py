"""A column's best is marked only where there is a comparison: at least two kept runs with
values that differ (a single run's every cell was marked best)."""

from __future__ import annotations

from sga_core.report.table import best_values


def run(name, **values):
    return {"run": name, "method": "sga", "r": -0.8, **values}


def test_one_run_or_equal_values_have_no_best():
    assert best_values([run("a", FQ=0.2, MU=0.4)]) == {}
    assert best_values([run("Original", FQ=0.9), run("a", FQ=0.2)]) == {}  # a reference
    assert best_values([run("a", FQ=0.2), run("b", FQ=0.2)]) == {}
    assert best_values([run("a", FQ=0.2), run("b", FQ=None)]) == {}


def test_two_differing_values_have_a_best():
    best = best_values([run("a", FQ=0.2, MU=0.4), run("b", FQ=0.3, MU=0.4)])
    assert best == {"FQ": 0.3}
