"""Evaluation during training (docs/spec.md#56-evaluation-during-training): a cheap subset every N
steps into eval_steps.jsonl, FQ from the reference's cached truth ratios (never a second model in
the training process), the best step marked and optionally kept, the training itself unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sga_core.config import STEP_METRICS, TrainConfig
from sga_core.fileio import read_json, read_jsonl
from sga_core.runs.status import read_run
from sga_core.train.trainer import run_training

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reference(tmp_path_factory, tiny_model_dir, demo_dir) -> Path:
    """A retain-reference run folder whose own evaluation holds its forget truth ratios
    (another random tiny model, so FQ is not trivially 1)."""
    from sga_core.evaluation import EvalSettings, evaluate_model
    from sga_core.model.tiny import build_tiny_model

    ref = tmp_path_factory.mktemp("ref") / "demo-retain-ref"
    build_tiny_model(ref / "model", seed=5)
    (ref / "config.yaml").write_text("run_id: demo-retain-ref\n")
    evaluate_model(str(ref / "model"), ref / "eval", str(demo_dir / "forget.jsonl"),
                   str(demo_dir / "retain.jsonl"), {}, str(ref), task="qa",
                   settings=EvalSettings(max_new_tokens=4, max_retain_rows=4))
    return ref


def cfg_for(model, demo_dir, reference, **training) -> TrainConfig:
    return TrainConfig.from_dict({
        "run_id": "steps", "model": str(model), "method": "ga",
        "data": {"forget": str(demo_dir / "forget.jsonl"),
                 "retain": str(demo_dir / "retain.jsonl")},
        "training": {"max_steps": 5, "batch_size": 4, "lr": 2e-3, "seed": 1,
                     "probe_count": 0, "eval_nll": False, **training},
        "eval": {"enabled": False, "reference": str(reference) if reference else None,
                 "max_new_tokens": 4}})


def train(cfg, run_dir: Path) -> str:
    run_dir.mkdir(parents=True)
    return run_training(cfg, run_dir)


@pytest.fixture(scope="module")
def evaluated_run(tmp_path_factory, tiny_model_dir, demo_dir, reference):
    run_dir = tmp_path_factory.mktemp("runs") / "with-evals"
    cfg = cfg_for(tiny_model_dir, demo_dir, reference, eval_every=2, keep_best=True,
                  eval_metric="forget_probability", eval_retain_rows=6, eval_rouge_rows=2)
    assert train(cfg, run_dir) == "completed"
    return run_dir


def test_records_at_0_every_n_and_the_last_step(evaluated_run):
    recs = read_jsonl(evaluated_run / "eval_steps.jsonl")
    assert [r["step"] for r in recs] == [0, 2, 4, 5]
    for r in recs:
        assert (r["forget_rows"], r["retain_rows"], r["rouge_rows"]) == (10, 6, 2)
        for name in STEP_METRICS:
            assert isinstance(r[name], float), (name, r["reasons"])
        assert r["eval_s"] > 0 and r["train_elapsed_s"] >= 0
    # gradient ascent pushes the forget answers down
    assert recs[-1]["forget_probability"] < recs[0]["forget_probability"]


def test_best_step_is_marked_and_its_model_kept(evaluated_run, demo_dir):
    from sga_core.data import load_qa
    from sga_core.evaluation.run import load_model_and_tokenizer
    from sga_core.metrics.tofu import probability
    from sga_core.model.encoding import Encoder
    from sga_core.model.forward import rows_nll

    recs = read_jsonl(evaluated_run / "eval_steps.jsonl")
    low = min(r["forget_probability"] for r in recs)
    best = next(r for r in recs if r["forget_probability"] == low)  # earliest on ties
    status = read_run(evaluated_run)
    assert status["best_step"] == best["step"] and status["best_metric"] == \
        "forget_probability"
    assert status["best_value"] == pytest.approx(low)
    assert best["best"] and recs[0]["best"]  # step 0 is the first best
    # the kept model is the best step's: its forget probability is the recorded one
    model, tok = load_model_and_tokenizer(str(evaluated_run / "best_model"))
    nlls = rows_nll(model, Encoder(tok), load_qa(demo_dir / "forget.jsonl"))
    assert probability(nlls).value == pytest.approx(low, abs=1e-5)


def test_the_last_evaluation_matches_the_final_one(evaluated_run, reference, demo_dir):
    """With every forget row, the step evaluation's FQ and forget probability are the final
    evaluation's (the same catalog entries on the same rows)."""
    from sga_core.evaluation import EvalSettings, evaluate_model

    last = read_jsonl(evaluated_run / "eval_steps.jsonl")[-1]
    summ = evaluate_model(str(evaluated_run / "model"), evaluated_run / "final",
                          str(demo_dir / "forget.jsonl"), None, {}, str(reference),
                          settings=EvalSettings(max_new_tokens=4))
    assert last["forget_quality"] == pytest.approx(summ["metrics"]["forget_quality"]["value"])
    assert last["forget_probability"] == pytest.approx(
        summ["metrics"]["forget_probability"]["value"], abs=1e-6)
    assert last["forget_truth_ratio"] == pytest.approx(
        summ["metrics"]["forget_truth_ratio"]["value"], abs=1e-6)


def test_training_is_the_same_with_and_without_evaluations(evaluated_run, tiny_model_dir,
                                                           demo_dir, tmp_path, monkeypatch):
    """The losses and the final weights do not change; and the training process loads one
    model only (the reference's values come from its cache)."""
    from sga_core.model import loading
    from tests.e2e.test_training import load_weights, max_abs_diff

    loads = []
    real = loading.load_model
    monkeypatch.setattr(loading, "load_model", lambda *a, **k: loads.append(a) or real(*a,
                                                                                        **k))
    plain = tmp_path / "plain"
    assert train(cfg_for(tiny_model_dir, demo_dir, None), plain) == "completed"
    assert len(loads) == 1
    a = read_jsonl(evaluated_run / "metrics.jsonl")
    b = read_jsonl(plain / "metrics.jsonl")
    assert [m["loss"] for m in a] == pytest.approx([m["loss"] for m in b], abs=1e-7)
    wa, wb = load_weights(evaluated_run / "model"), load_weights(plain / "model")
    assert max_abs_diff(wa, wb) < 1e-7
    assert not (plain / "eval_steps.jsonl").exists()


def test_fq_needs_the_cached_reference(tiny_model_dir, demo_dir, reference, tmp_path):
    bare = tmp_path / "bare-ref"
    shutil.copytree(reference / "model", bare / "model")  # a reference never evaluated
    run_dir = tmp_path / "r"
    assert train(cfg_for(tiny_model_dir, demo_dir, bare, eval_every=3, max_steps=3,
                         eval_forget_rows=4, eval_rouge_rows=0), run_dir) == "completed"
    recs = read_jsonl(run_dir / "eval_steps.jsonl")
    assert [r["step"] for r in recs] == [0, 3]
    assert recs[0]["forget_quality"] is None
    assert "not cached" in recs[0]["reasons"]["forget_quality"]
    assert recs[0]["forget_rows"] == 4 and recs[0]["forget_rouge"] is None
    assert "eval_rouge_rows 0" in recs[0]["reasons"]["forget_rouge"]
    assert isinstance(recs[0]["forget_probability"], float)
    assert "best_step" not in read_run(run_dir)  # FQ (the default metric) never known
    assert not (run_dir / "best_model").exists()
    assert read_json(reference / "eval" / "summary.json")["forget_truth_ratios"]


def test_text_data_turns_it_off(tiny_model_dir, demo_dir, tmp_path, capsys):
    cfg = TrainConfig.from_dict({
        "run_id": "t", "model": str(tiny_model_dir), "method": "ga",
        "data": {"task": "text", "forget": str(demo_dir / "text_forget.jsonl")},
        "training": {"max_steps": 1, "batch_size": 2, "eval_every": 1, "probe_count": 0,
                     "eval_nll": False, "save_model": False},
        "eval": {"enabled": False}})
    assert train(cfg, tmp_path / "t") == "completed"
    assert not (tmp_path / "t" / "eval_steps.jsonl").exists()
    assert "QA data only" in capsys.readouterr().out
