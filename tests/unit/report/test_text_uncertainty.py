"""Every column of a text project's Results table has an interval
(docs/spec.md#57-seeds-and-groups): VerbMem and KnowMem (means of rows), and PrivLeak, MIA
AUC and perplexity (recomputed on each bootstrap resample of the rows), for one run and for
two runs compared;
and a text evaluation writes the token tables of the Token probabilities page. Real
evaluations of tiny models on the demo's text sets."""

from __future__ import annotations

import pytest

from sga_core.evaluation import EvalSettings, evaluate_model
from sga_core.fileio import read_json, read_jsonl
from sga_core.report.uncertainty import compare_runs, run_intervals

FAST = EvalSettings(max_new_tokens=4, batch_size=16)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, tiny_model_dir, demo_dir):
    """The tiny model (its own reference: the "Retained") and another tiny model evaluated
    against it, on the demo's text forget, retain, holdout and QA sets."""
    from sga_core.model.tiny import build_tiny_model

    d = tmp_path_factory.mktemp("textunc")
    other = build_tiny_model(d / "other", seed=1)
    sets = {"holdout": demo_dir / "text_holdout.jsonl",
            "forget_qa": demo_dir / "text_forget_qa.jsonl"}
    runs = {}
    for name, model in (("ref", tiny_model_dir), ("other", other)):
        runs[name] = d / name
        evaluate_model(str(model), runs[name] / "eval", demo_dir / "text_forget.jsonl",
                       demo_dir / "text_retain.jsonl", sets, str(tiny_model_dir),
                       task="text", settings=FAST)
    return runs


def test_text_intervals_reproduce_every_column(evaluated):
    summary = read_json(evaluated["other"] / "eval" / "summary.json")["metrics"]
    rows = {r["metric"]: r for r in run_intervals(evaluated["other"], n_boot=300)}
    for name in ("forget_verbmem", "forget_knowmem", "mia_auc", "privleak",
                 "holdout_perplexity", "forget_perplexity", "retain_perplexity"):
        if summary[name]["value"] is None:
            continue
        r = rows[name]
        assert r["value"] == pytest.approx(summary[name]["value"], rel=1e-6), name
        assert r["lo"] <= r["value"] <= r["hi"], (name, r)
    assert rows["privleak"]["label"] == "PrivLeak" and rows["holdout_perplexity"]["label"] == "PPL"
    assert rows["holdout_perplexity"]["lo"] < rows["holdout_perplexity"]["hi"]


def test_two_text_runs_compared_on_privleak_and_ppl(evaluated):
    sa = read_json(evaluated["other"] / "eval" / "summary.json")["metrics"]
    sb = read_json(evaluated["ref"] / "eval" / "summary.json")["metrics"]
    rows = {r["metric"]: r for r in compare_runs(evaluated["other"], evaluated["ref"],
                                                 n_boot=300)["rows"]}
    for name in ("privleak", "holdout_perplexity", "forget_verbmem"):
        r = rows[name]
        assert r["diff"] == pytest.approx(sa[name]["value"] - sb[name]["value"], rel=1e-6)
        assert r["lo"] <= r["diff"] <= r["hi"] and r["n"] == 10
    same = {r["metric"]: r for r in compare_runs(evaluated["ref"], evaluated["ref"],
                                                 n_boot=100)["rows"]}
    assert (same["privleak"]["lo"], same["privleak"]["hi"]) == (0.0, 0.0)


def test_text_evaluation_writes_token_tables_of_the_continuations(evaluated):
    from sga_core.report.run_files import token_table

    tables = token_table(evaluated["other"])
    assert sorted(tables) == list(range(10))
    t = tables[0]
    assert t["prompt"].startswith("Lucien Marchetti was born in Lyon")
    assert len(t["tokens"]) == len(t["probs"]) == len(t["top"]) == len(t["token_ids"]) > 5
    assert all(len(alts) == 5 for alts in t["top"]) and all(0 <= p <= 1 for p in t["probs"])
    text = "".join(t["tokens"])
    assert "opera singer" in text  # the continuation after the VerbMem prefix
    per = [r for r in read_jsonl(evaluated["other"] / "eval" / "per_sample.jsonl")
           if r["set"] == "forget"]
    assert all(isinstance(r["scored_tokens"], int) and r["scored_tokens"] > 0 for r in per)
