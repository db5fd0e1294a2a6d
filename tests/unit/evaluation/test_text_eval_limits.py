"""The MUSE protocol within reach on a CPU (docs/text-unlearning.md): a row limit for every
evaluation set, recorded as "n of N rows" with each row's own index, and progress after
every batch of every stage, so each stage can show an ETA."""

from __future__ import annotations

import json

import pytest

from sga_core.evaluation import EvalSettings, evaluate_model
from sga_core.fileio import read_jsonl


@pytest.fixture()
def text_sets(demo_dir):
    return {"holdout": str(demo_dir / "text_holdout.jsonl"),
            "forget_qa": str(demo_dir / "text_forget_qa.jsonl"),
            "retain_qa": str(demo_dir / "text_retain_qa.jsonl")}


def test_max_rows_limits_every_set_and_says_n_of_n(tiny_model_dir, demo_dir, text_sets,
                                                   tmp_path):
    out = tmp_path / "eval"
    st = EvalSettings(protocol="muse", max_rows=3, batch_size=2, max_new_tokens=4)
    summ = evaluate_model(str(tiny_model_dir), out, str(demo_dir / "text_forget.jsonl"),
                          str(demo_dir / "text_retain.jsonl"), text_sets, task="text",
                          settings=st)
    assert summ["rows"]["forget"] == 3 and summ["rows"]["retain"] == 3
    assert summ["rows"]["holdout"] == 3 and summ["rows"]["forget_qa"] == 3
    assert summ["rows_of"] == {"forget": 10, "retain": 20, "holdout": 10, "forget_qa": 5,
                               "retain_qa": 5}
    assert summ["settings"]["max_rows"] == 3
    samples = read_jsonl(out / "per_sample.jsonl")
    by_set: dict[str, list[int]] = {}
    for s in samples:
        by_set.setdefault(s["set"], []).append(s["index"])
    # the rows' own indices: an evenly spaced subset, not 0, 1, 2
    assert sorted(set(by_set["forget"])) == [0, 3, 6]
    assert sorted(set(by_set["retain"])) == [0, 6, 13]
    tokens = read_jsonl(out / "tokens.jsonl")
    assert [t["index"] for t in tokens] == [0, 3, 6]
    assert json.loads((out / "summary.json").read_text())["rows_of"]["holdout"] == 10


def test_every_stage_reports_progress_after_each_batch(tiny_model_dir, demo_dir, text_sets,
                                                      tmp_path):
    heard: dict[str, list[tuple[int, int]]] = {}

    def progress(stage, done, total):
        heard.setdefault(stage, []).append((done, total))

    st = EvalSettings(protocol="muse", batch_size=2, max_new_tokens=4, max_rows=5)
    evaluate_model(str(tiny_model_dir), tmp_path / "eval", str(demo_dir / "text_forget.jsonl"),
                   str(demo_dir / "text_retain.jsonl"), text_sets, task="text", settings=st,
                   progress=progress)
    assert "scoring texts" in heard
    for stage, calls in heard.items():
        total = calls[-1][1]
        if total > 2:  # more than one batch: some report between the first and the last
            between = [d for d, _ in calls if 0 < d < total]
            assert between, f"{stage}: no progress between 0 and {total}: {calls}"
        assert calls[-1][0] == total, f"{stage} never reached its total: {calls}"


def test_the_results_table_says_n_of_n_rows():
    from sga_core.report.table import protocol_note, rows_evaluated

    summ = {"rows": {"forget": 3, "holdout": 3, "retain": 3},
            "rows_of": {"forget": 10, "holdout": 10}}
    assert rows_evaluated(summ) == "forget: 3 of 10 rows, holdout: 3 of 10 rows"
    assert rows_evaluated({"rows": {"forget": 10}}) is None
    rows = [{"run": "Original", "protocol": "muse", "rows_evaluated": rows_evaluated(summ)},
            {"run": "ga", "protocol": "muse", "rows_evaluated": rows_evaluated(summ)}]
    note = protocol_note(rows)
    assert "evaluated on a subset: forget: 3 of 10 rows, holdout: 3 of 10 rows" in note
    rows[1]["rows_evaluated"] = None
    assert "Original: forget: 3 of 10 rows" in protocol_note(rows)


def test_each_metric_says_the_rows_of_its_own_sets():
    from sga_core.report.table import metric_rows

    summ = {"rows": {"forget": 3, "holdout": 3, "retain": 20, "forget_qa": 3, "news": 3},
            "rows_of": {"forget": 10, "holdout": 10, "forget_qa": 5, "news": 7}}
    assert metric_rows(summ, "privleak", "text") == "6 of 20 rows"  # forget + holdout
    assert metric_rows(summ, "forget_knowmem", "text") == "3 of 5 rows"
    assert metric_rows(summ, "news_knowmem", "text") == "3 of 7 rows"  # an extra QA set
    assert metric_rows(summ, "retain_perplexity", "text") is None  # every retain row
    assert metric_rows({"rows": summ["rows"]}, "privleak", "text") is None
