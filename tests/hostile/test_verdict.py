"""Hostile inputs to the measurability verdict and to the pickers that follow the person:

- per-row values an evaluation file may hold (a Min-K% score that is text, a boolean, NaN or
  infinite; a perplexity of 0, below 0 or text; scored tokens of 0 or text; rows whose text
  differs between the two models; no holdout rows; a Retained whose AUC is 1, which leaves
  PrivLeak undefined; a repeated row index): the verdict is one of its four states with
  its line of text, or no verdict naming the damaged file; never an exception;
- a ``?run=`` in the Runs page's URL that is no run (a path, a NUL byte, 10,000
  characters, markup, the name twice): the page opens on its usual run, without an error.
"""

from __future__ import annotations

import json
import math

import pytest

from sga_core.fileio import atomic_write_json
from sga_core.report.measurable import MEASURABLE, NO_VERDICT, NOT_MEMORISED, TOO_FEW, measurability

HOLDOUT = [-3.0 - 0.1 * i for i in range(6)]


def text_eval(run_dir, forget_mink, holdout_mink, ppl, mutate=None):
    recs = [{"set": "forget", "index": i, "prompt": f"p{i}", "reference": f"c{i}",
             "generated": "g", "rouge_l_f1": 0.5, "min_k_score": m, "perplexity": p,
             "scored_tokens": 100} for i, (m, p) in enumerate(zip(forget_mink, ppl))]
    recs += [{"set": "holdout", "index": i, "reference": f"h{i}", "min_k_score": m}
             for i, m in enumerate(holdout_mink)]
    if mutate:
        mutate(recs)
    (run_dir / "eval").mkdir(parents=True, exist_ok=True)
    (run_dir / "eval" / "per_sample.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in recs))
    atomic_write_json(run_dir / "eval" / "summary.json", {
        "task": "text", "rows": {"forget": len(forget_mink), "holdout": len(holdout_mink)},
        "metrics": {k: {"name": k, "value": v, "reason": None} for k, v in {
            "forget_verbmem": 0.5, "mia_auc": 0.9, "privleak": -50.0,
            "forget_perplexity": 5.0}.items()}})
    return run_dir


def first(key, value):
    def mutate(recs):
        recs[0][key] = value
    return mutate


def all_forget(key, value):
    def mutate(recs):
        for r in recs:
            if r["set"] == "forget":
                r[key] = value
    return mutate


def drop_holdout(recs):
    recs[:] = [r for r in recs if r["set"] != "holdout"]


def other_text(recs):
    for r in recs:
        r["prompt"] = "another " + r.get("prompt", "")
        r["reference"] = "another " + r["reference"]


def repeat_index(recs):
    recs.append(dict(recs[0]))


MUTATIONS = {
    "min_k text": first("min_k_score", "x"), "min_k bool": first("min_k_score", True),
    "min_k NaN": first("min_k_score", math.nan), "min_k inf": first("min_k_score", math.inf),
    "min_k missing": all_forget("min_k_score", None), "ppl 0": first("perplexity", 0),
    "ppl negative": first("perplexity", -3.0), "ppl text": first("perplexity", "x"),
    "tokens 0": first("scored_tokens", 0), "tokens text": first("scored_tokens", "5"),
    "no holdout rows": drop_holdout, "other rows' text": other_text,
    "index twice": repeat_index,
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_hostile_rows_give_a_verdict_or_a_reason_never_an_exception(tmp_path, name):
    o = text_eval(tmp_path / "o", [-0.2 - 0.01 * i for i in range(6)], HOLDOUT,
                  [4.0] * 6, MUTATIONS[name])
    r = text_eval(tmp_path / "r", [-3.05 - 0.1 * i for i in range(6)], HOLDOUT, [37.0] * 6)
    v = measurability(o, r, n_boot=200)
    assert v["state"] in (MEASURABLE, NOT_MEMORISED, TOO_FEW, NO_VERDICT), v
    assert isinstance(v["text"], str) and v["text"]
    if v["state"] == NO_VERDICT:
        assert v["reason"], v
    else:
        assert v["decided_by"], v
        for row in v["rows"]:
            assert row["decides"] in ("separates", "rules out", "too wide")


def test_a_retained_with_an_auc_of_1_leaves_privleak_out(tmp_path):
    # the Retained scores its forget texts above every holdout text: PrivLeak's reference
    # AUC is 1 and PrivLeak is undefined; the other metrics still decide
    o = text_eval(tmp_path / "o", [-0.2 - 0.01 * i for i in range(6)], HOLDOUT, [4.0] * 6)
    r = text_eval(tmp_path / "r", [-0.1 - 0.01 * i for i in range(6)], HOLDOUT, [37.0] * 6)
    v = measurability(o, r, n_boot=200)
    assert "privleak" not in {x["metric"] for x in v["rows"]}
    assert v["state"] == MEASURABLE and "forget PPL" in v["decided_by"], v


@pytest.mark.slow
@pytest.mark.parametrize("linked", ["../../etc/passwd", "a\x00b", "x" * 10000,
                                    "<script>alert(1)</script>", ["a", "b"]])
def test_a_hostile_run_in_the_url_opens_the_usual_run(ui_env, linked):
    from streamlit.testing.v1 import AppTest

    from sga_core.projects import create_demo_project
    from tests.helpers.own_data import fake_run, metrics
    from tests.helpers.ui import APP

    project = create_demo_project(root=ui_env / "workspace")
    fake_run(ui_env / "runs", project, "sga-20261122-100000", metrics=metrics())
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"project": "demo", "run": linked})
    at.run()
    at.switch_page("app_pages/runs.py").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="runs.select").value == "sga-20261122-100000"
    assert at.query_params.get("run") == "sga-20261122-100000"
