"""A column's best is marked only where there is a comparison, and only where the best beats
every other candidate beyond noise: by more than the metric's negligible gap, and by the
paired interval of the two runs where they share rows
(docs/spec.md#510-can-this-experiment-measure-forgetting; a new user's study found "best"
marked between SGA's VerbMem 0.0965 and GA's 0.0983 over 8 rows)."""

from __future__ import annotations

from sga_core.metrics.catalog import QA, TEXT
from sga_core.report.paper import top_values
from sga_core.report.ranking import best_values
from tests.unit.report.test_measurable import qa_run


def run(name, **values):
    return {"run": name, "method": "sga", "r": -0.8, **values}


def test_one_run_or_equal_values_have_no_best():
    assert best_values([run("a", FQ=0.2, MU=0.4)]) == {}
    assert best_values([run("Original", FQ=0.9), run("a", FQ=0.2)]) == {}  # a reference
    assert best_values([run("a", FQ=0.2), run("b", FQ=0.2)]) == {}
    assert best_values([run("a", FQ=0.2), run("b", FQ=None)]) == {}


def test_two_values_apart_beyond_the_gap_have_a_best():
    best = best_values([run("a", FQ=0.2, MU=0.4), run("b", FQ=0.3, MU=0.5)])
    assert best == {"FQ": 0.3, "MU": 0.5}


def test_values_within_the_negligible_gap_have_no_best():
    # the study's numbers: SGA's and GA's VerbMem and KnowMem
    rows = [run("sga", VerbMem=0.0965, **{"KnowMem forget": 0.0}),
            run("ga", VerbMem=0.0983, **{"KnowMem forget": 0.0})]
    assert best_values(rows, TEXT) == {}
    # MU 0.40 against 0.42; PrivLeak -3 against 5 points; FQ 1e-5 against 1.2e-5
    assert best_values([run("a", MU=0.40, FQ=1e-5), run("b", MU=0.42, FQ=1.2e-5)]) == {}
    assert best_values([run("a", PrivLeak=-3.0), run("b", PrivLeak=5.0)], TEXT) == {}
    # the best must beat every other: two close leaders, neither is best
    assert best_values([run("a", MU=0.50), run("b", MU=0.49), run("c", MU=0.1)]) == {}


def test_a_perplexitys_gap_is_a_share_of_the_retaineds():
    rows = [run("Retained", PPL=40.0), run("a", PPL=30.0), run("b", PPL=33.0)]
    assert best_values(rows, TEXT) == {}  # 3 < 10% of 40
    rows[2]["PPL"] = 36.0
    assert best_values(rows, TEXT) == {"PPL": 30.0}


def test_a_best_beyond_the_gap_but_within_noise_of_the_paired_rows_is_not_marked(tmp_path):
    # forget ROUGE-L 0.1 against 0.2: beyond the gap, but A's 0.1 is one row of 1.0 among
    # zeros: the paired interval of A - B holds 0
    qa_run(tmp_path / "a", [0.5] * 10, [0.0] * 9 + [1.0])
    qa_run(tmp_path / "b", [0.5] * 10, [0.2] * 10)
    qa_run(tmp_path / "c", [0.5] * 10, [0.0] * 10)
    rows = [{"run": n, "run_id": n, "forget ROUGE-L": v} for n, v in (("a", 0.1), ("b", 0.2))]
    assert best_values(rows, QA) == {"forget ROUGE-L": 0.1}  # the gap alone
    assert best_values(rows, QA, root=tmp_path) == {}
    # every row lower: the interval excludes 0, a best
    rows[0].update(run="c", run_id="c", **{"forget ROUGE-L": 0.0})
    assert best_values(rows, QA, root=tmp_path) == {"forget ROUGE-L": 0.0}


def test_the_paper_tables_top_2_stop_where_the_values_do_not_differ():
    rows = [run("a", FQ=0.9), run("b", FQ=0.5), run("c", FQ=0.01), run("d", FQ=0.0095)]
    assert top_values(rows, QA)["FQ"] == [0.9, 0.5]
    rows[1]["FQ"] = 0.85  # b within a factor of 1.25 of a: both beat c, as a pair
    assert top_values(rows, QA)["FQ"] == [0.9, 0.85]
    rows[2]["FQ"] = 0.8  # three close values: the top 1 if it beats them, else none
    assert "FQ" not in top_values(rows, QA)
    assert top_values([run("a", FQ=0.9), run("b", FQ=0.5)], QA)["FQ"] == [0.9]


def test_on_a_forget_side_metric_a_best_must_beat_the_original():
    # a new user's study: both runs' VerbMem rose above the Original's; GA's 0.25 was bold
    rows = [run("Original", VerbMem=0.2299, **{"KnowMem retain": 0.5}),
            run("Retained", VerbMem=0.04955, **{"KnowMem retain": 0.5}),
            run("sga", VerbMem=0.375, **{"KnowMem retain": 0.2}),
            run("ga", VerbMem=0.25, **{"KnowMem retain": 0.4})]
    best = best_values(rows, TEXT)
    assert "VerbMem" not in best
    assert best["KnowMem retain"] == 0.4  # retain side: the Original is no bar
    rows[3]["VerbMem"] = 0.10  # GA forgot: below the Original beyond the gap
    assert best_values(rows, TEXT)["VerbMem"] == 0.10
    rows[3]["VerbMem"] = 0.20  # below it, but within the gap: no forgetting to speak of
    assert "VerbMem" not in best_values(rows, TEXT)
    # the paper table's top 2 stop at the same bar
    rows[2]["VerbMem"], rows[3]["VerbMem"] = 0.05, 0.21
    assert top_values(rows, TEXT)["VerbMem"] == [0.05]


def test_the_suggested_r_is_none_when_no_r_improves_on_the_original():
    from sga_core.report import sweeps

    rows = [{"run": "Original", "run_id": "o", "method": "-", "r": None, "sweep": None,
             "VerbMem": 0.2299},
            {"run": "Retained", "run_id": "rr", "method": "-", "r": None, "sweep": None,
             "VerbMem": 0.0496},
            {"run": "sga r=-0.8", "run_id": "a", "method": "sga", "r": -0.8, "sweep": "sw",
             "VerbMem": 0.375},
            {"run": "sga r=0", "run_id": "b", "method": "sga", "r": 0.0, "sweep": "sw",
             "VerbMem": 0.25}]
    s = sweeps.suggest_r(rows, "sw", "VerbMem", TEXT)
    assert s["improves"] is False and s["original"] == 0.2299
    text = sweeps.suggestion_text(s)
    assert text.startswith("No r is suggested by VerbMem: no r improves on the Original's "
                           "0.2299 (the closest, r = 0, has")
    rows[3]["VerbMem"] = 0.1
    assert sweeps.suggestion_text(sweeps.suggest_r(rows, "sw", "VerbMem", TEXT)).startswith(
        "Best VerbMem at r = 0")
