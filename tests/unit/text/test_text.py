"""Counts in words: one of a thing is singular ("Queued 1 run", not "Queued 1 runs")."""

from __future__ import annotations

from sga_core.text import plural


def test_one_is_singular_others_plural():
    assert plural(1, "run") == "1 run"
    assert [plural(n, "run") for n in (0, 2, 11)] == ["0 runs", "2 runs", "11 runs"]
    assert plural(1, "entry", "entries") == "1 entry"
    assert plural(3, "entry", "entries") == "3 entries"
