"""The Results CSV download writes integers as integers: K, n, seeds and each metric's n
read 4, 3, 0 (a trial's CSV said K 4.0 and n 1.0: missing cells had made whole columns
floats), metrics keep their decimals, and missing values are empty cells."""

from __future__ import annotations

import csv
import io

from sga_core.report import export
from tests.unit.report.test_comparison import ROWS


def test_csv_integers_are_integers():
    rows = [*ROWS, {**ROWS[-1], "run": "k-float", "run_id": "k-float", "K": 4.0, "r": 1.0}]
    out = list(csv.DictReader(io.StringIO(export.export_csv(rows))))
    seeds = [o for o in out if o["level"] == "seed"]
    groups = [o for o in out if o["level"] == "group"]
    assert len(seeds) == len(rows)
    assert {o["K"] for o in out if o["method"] == "sga"} == {"4"}
    assert {o["n"] for o in groups} == {"1", "3"} and {o["FQ n"] for o in groups} == {"1", "3"}
    assert [o["seed"] for o in seeds[2:5]] == ["0", "1", "2"]
    assert all(o["n"] == "" for o in seeds)  # n is a group's
    assert next(o for o in seeds if o["run_id"] == "a0")["FQ"] == "0.4"
    assert next(o for o in seeds if o["run_id"] == "k-float")["r"] == "1.0"  # r is a value
    gb = next(o for o in groups if o["group"] == "g-b")
    assert float(gb["FQ"]) == 0.15 and "." in gb["FQ sd"]
    assert not any(v.endswith(".0") for o in out for k, v in o.items()
                   if k in ("K", "n", "seed") or k.endswith(" n"))
