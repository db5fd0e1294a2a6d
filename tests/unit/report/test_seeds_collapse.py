"""A collapsed seed in the views over seeds (docs/spec.md#57-seeds-and-groups and the collapse
rule, docs/decisions/005-collapse-rule.md): it stays in its configuration's mean (dropping it
would report only the seeds that survived), the pooled table says how many seeds collapsed,
and the r suggestion never names a value at which a seed collapsed, saying why."""

from __future__ import annotations

import pytest

from sga_core.report import export, sweeps
from sga_core.report import seeds as pooled
from tests.unit.report.test_comparison import ROWS


def with_collapse(rows, collapsed_ids):
    out = []
    for r in rows:
        if r["run"] in ("Original", "Retained"):
            out.append(r)
        else:
            out.append({**r, "collapsed": r["run_id"] in collapsed_ids})
    return out


def test_a_collapsed_seed_stays_in_the_mean_and_is_counted():
    rows = with_collapse(ROWS, {"a1"})
    g = {g["label"]: g for g in pooled.groups(rows)}["sga r=-0.8"]
    assert g["FQ"].mean == pytest.approx((0.40 + 0.58 + 0.58) / 3)  # not (0.40 + 0.58) / 2
    assert g["collapsed"] == 1
    shown = {d["configuration"]: d for d in pooled.group_display(rows)}
    assert shown["sga r=-0.8"]["collapsed"] == "1 of 3"
    assert shown["sga r=0"]["collapsed"] == "no"
    assert shown["Original"]["collapsed"] is None  # never judged


def test_all_seeds_collapsed_reads_as_all():
    rows = with_collapse(ROWS, {"b0", "b1", "b2"})
    shown = {d["configuration"]: d for d in pooled.group_display(rows)}
    assert shown["sga r=0"]["collapsed"] == "all 3"


def test_the_suggestion_skips_a_value_where_a_seed_collapsed():
    plain = sweeps.suggest_r(with_collapse(ROWS, set()), "sw", "FQ")
    assert plain["r"] == -0.8 and plain["excluded"] == {}
    s = sweeps.suggest_r(with_collapse(ROWS, {"a2"}), "sw", "FQ")
    assert s["r"] == 0.4  # -0.8 had the best mean, but one of its seeds collapsed
    assert s["excluded"] == {-0.8: "1 of 3 seeds collapsed"}
    assert -0.8 not in {o["r"] for o in s["others"]}
    text = sweeps.suggestion_text(s)
    assert "Best FQ at r = 0.4" in text
    assert "Not suggested, because a seed collapsed there: r = -0.8 (1 of 3 seeds collapsed)" \
        in text


def test_nothing_to_suggest_when_every_value_collapsed():
    s = sweeps.suggest_r(with_collapse(ROWS, {"a0", "b0", "c0", "single"}), "sw", "FQ")
    assert s["r"] is None and set(s["excluded"]) == {-0.8, 0.0, 0.4}
    text = sweeps.suggestion_text(s)
    assert text.startswith("No r to suggest by FQ.") and "r = 0 (1 of 3 seeds" in text


def test_the_export_counts_collapsed_seeds_per_configuration():
    out = export.export_rows(with_collapse(ROWS, {"c0", "c2"}))
    groups = {o["group"]: o for o in out if o["level"] == "group"}
    assert groups["g-c"]["collapsed seeds"] == 2 and groups["g-a"]["collapsed seeds"] == 0
    assert next(o for o in out if o["level"] == "group" and o["configuration"] == "Original")[
        "collapsed seeds"] is None
