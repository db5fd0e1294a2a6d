"""The uncertainty of one run and of a two-run difference (docs/spec.md#57-seeds-and-groups), and
Model Utility's components (docs/spec.md#45-model-utility), on real evaluations of tiny models."""

from __future__ import annotations

from pathlib import Path

import pytest

from sga_core.data import load_qa
from sga_core.data.loaders import write_dataset
from sga_core.evaluation import EvalSettings, evaluate_model, format_summary
from sga_core.fileio import read_json
from sga_core.metrics.tofu import MODEL_UTILITY_KEYS
from sga_core.report.uncertainty import (
    compare_runs,
    fq_resolution,
    fq_resolution_text,
    run_intervals,
)

FAST = EvalSettings(max_new_tokens=6, batch_size=16, max_retain_rows=12)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, tiny_model_dir, demo_dir):
    """Two evaluated "runs" (the tiny model and another random tiny model) on the demo's
    forget rows, a retain subset and both real-world sets, FQ against a third model."""
    from sga_core.model.tiny import build_tiny_model

    d = tmp_path_factory.mktemp("unc")
    data = {}
    for name, n in (("forget", 10), ("retain", 12), ("real_authors", 5), ("world_facts", 5)):
        data[name] = write_dataset(d / f"{name}.jsonl", load_qa(demo_dir / f"{name}.jsonl")[:n])
    other = build_tiny_model(d / "other", seed=1)
    ref = build_tiny_model(d / "ref", seed=2)
    runs = {}
    for name, model in (("a", tiny_model_dir), ("b", other)):
        runs[name] = d / name
        evaluate_model(str(model), runs[name] / "eval", data["forget"], data["retain"],
                       {"real_authors": data["real_authors"],
                        "world_facts": data["world_facts"]}, str(ref), task="qa",
                       settings=FAST)
    return runs


def test_row_intervals_reproduce_the_summary_and_hold_it(evaluated):
    summary = read_json(evaluated["a"] / "eval" / "summary.json")
    rows = {r["metric"]: r for r in run_intervals(evaluated["a"])}
    for set_name, name in (("forget", "forget_probability"), ("forget", "forget_truth_ratio"),
                           ("forget", "forget_rouge"), ("retain", "retain_probability"),
                           ("retain", "retain_truth_ratio"), ("retain", "retain_rouge"),
                           ("real_authors", "real_authors_probability"),
                           ("world_facts", "world_facts_truth_ratio")):
        r = rows[name]
        assert r["value"] == pytest.approx(summary["metrics"][name]["value"], abs=1e-9), name
        assert r["lo"] <= r["value"] <= r["hi"]
        assert r["n"] == summary["rows"][set_name]
    assert rows["forget_rouge"]["label"] == "forget ROUGE-L"
    assert rows["real_authors_probability"]["label"] == "real_authors prob"
    assert list(rows)[0].startswith("forget")


def test_fq_resolution_lists_the_steps(evaluated):
    summary = read_json(evaluated["a"] / "eval" / "summary.json")
    res = fq_resolution(summary)
    assert res["n"] == res["m"] == 10
    ps = {round(p, 6) for _, p in res["steps"]}
    assert round(res["value"], 6) in ps  # the observed FQ is one of the steps
    text = fq_resolution_text(res)
    assert "over 10 forget rows" in text and "0.0524" in text and "D = " in text
    assert fq_resolution({"metrics": {"forget_quality": {"value": None}}}) is None
    # values that agree to 3 digits are shown with enough digits to tell them apart (a trial
    # read "1, 1, 0.931, ...")
    close = {**res, "steps": [(0.0, 1.0), (0.1, 0.99999), (0.2, 0.931)], "statistic": None}
    shown = fq_resolution_text(close).split("values: ")[1]
    assert shown.startswith("1, 0.99999, 0.931"), shown


def test_paired_difference_of_a_run_with_itself_is_zero(evaluated):
    out = compare_runs(evaluated["a"], evaluated["a"])
    assert out["mismatched"] == 0 and out["rows"]
    for r in out["rows"]:
        assert (r["diff"], r["lo"], r["hi"]) == (0.0, 0.0, 0.0), r
        assert not r["clear"]


def test_paired_difference_of_two_runs(evaluated):
    sa = read_json(evaluated["a"] / "eval" / "summary.json")["metrics"]
    sb = read_json(evaluated["b"] / "eval" / "summary.json")["metrics"]
    rows = {r["metric"]: r for r in compare_runs(evaluated["a"], evaluated["b"])["rows"]}
    for name in ("forget_probability", "forget_truth_ratio", "retain_probability"):
        r = rows[name]
        assert r["diff"] == pytest.approx(sa[name]["value"] - sb[name]["value"], abs=1e-9)
        assert r["lo"] <= r["diff"] <= r["hi"] and r["n"] > 1
        assert r["clear"] == (not r["lo"] <= 0 <= r["hi"])


def test_rows_with_other_questions_are_not_paired(evaluated, tmp_path):
    import shutil

    from sga_core.fileio import atomic_write_jsonl, read_jsonl

    other = tmp_path / "other"
    shutil.copytree(evaluated["b"], other)
    recs = read_jsonl(other / "eval" / "per_sample.jsonl")
    recs[0]["question"] = "something else"
    atomic_write_jsonl(other / "eval" / "per_sample.jsonl", recs)
    out = compare_runs(evaluated["a"], other)
    assert out["mismatched"] == 1
    assert {r["n"] for r in out["rows"] if r["metric"] == "forget_probability"} == {9}


def test_model_utility_components_sit_beside_mu(evaluated):
    summary = read_json(evaluated["a"] / "eval" / "summary.json")
    parts = summary["model_utility_components"]
    assert list(parts["components"]) == list(MODEL_UTILITY_KEYS)
    for key, v in parts["components"].items():
        assert v == pytest.approx(summary["metrics"][key]["value"])
    low = parts["lowest"]
    assert parts["components"][low] == min(parts["components"].values())
    mu = summary["metrics"]["model_utility"]["value"]
    assert mu <= parts["components"][low] * 9  # a harmonic mean is near its lowest part
    text = format_summary(summary)
    assert "  retain TR" in text and "<- lowest" in text
    assert text.index("model_utility") < text.index("  retain prob")


def test_results_rows_carry_components_and_the_lowest(evaluated, tmp_path):
    from sga_core.report.table import run_fields

    summary = read_json(evaluated["a"] / "eval" / "summary.json")
    fields = run_fields({"seed": 3, "group": "g"}, summary)
    assert fields["seed"] == 3 and fields["group"] == "g"
    assert len([k for k in fields if k.startswith("MU: ")]) == 9
    low = summary["model_utility_components"]["lowest"]
    assert fields["MU lowest"] == low.replace("_probability", " prob").replace(
        "_truth_ratio", " TR").replace("_rouge", " ROUGE-L")
    # an evaluation without MU (text data, old runs) adds no component columns
    assert "MU lowest" not in run_fields({}, {"metrics": {}})
    assert Path(evaluated["a"]).exists()


def test_model_utility_has_an_interval_over_rows(evaluated):
    summary = read_json(evaluated["a"] / "eval" / "summary.json")
    rows = {r["metric"]: r for r in run_intervals(evaluated["a"], n_boot=300)}
    mu = rows["model_utility"]
    assert mu["value"] == pytest.approx(summary["metrics"]["model_utility"]["value"], abs=1e-9)
    assert mu["lo"] <= mu["value"] <= mu["hi"] and mu["label"] == "MU"
    cmp = {r["metric"]: r for r in compare_runs(evaluated["a"], evaluated["b"],
                                                n_boot=300)["rows"]}
    sb = read_json(evaluated["b"] / "eval" / "summary.json")["metrics"]
    assert cmp["model_utility"]["diff"] == pytest.approx(
        summary["metrics"]["model_utility"]["value"] - sb["model_utility"]["value"], abs=1e-9)
