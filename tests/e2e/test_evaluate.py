"""Evaluation (docs/spec.md#4-metrics, docs/spec.md#52-files): a tiny trained run evaluated end to
end, Forget Quality with and without a reference, the reference cache, the CLI on a bare model, text
(MUSE) mode, the runner's follow-up evaluation and prepare's two evaluations.

Everything runs on the tiny random Llama model from ``conftest`` with a few demo rows, and
generations are kept short (``max_new_tokens`` 4-8); the tiny model's answers are nonsense,
so the tests check shapes, finiteness, reasons and caching, not metric levels.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from sga_core import evaluation as ev
from sga_core.config import ConfigError, TrainConfig, load_config
from sga_core.data import load_qa, load_text, write_dataset
from sga_core.evaluation import (
    PER_SAMPLE_FILE,
    QA_SAMPLE_KEYS,
    REFERENCE_CACHE_FILE,
    SUMMARY_FILE,
    TEXT_SAMPLE_KEYS,
    EvalSettings,
    evaluate_model,
    evaluate_run,
)
from sga_core.evaluation import run as ev_run  # the one place evaluation loads models
from sga_core.fileio import read_json, read_jsonl
from sga_core.metrics import MODEL_UTILITY_KEYS

QA_METRICS = {f"{s}_{m}" for s in ("forget", "retain", "real_authors", "world_facts")
              for m in ("probability", "truth_ratio", "rouge")} | {"model_utility",
                                                                    "forget_quality"}
TEXT_METRICS = {"forget_verbmem", "forget_knowmem", "retain_knowmem", "mia_auc", "privleak",
                "holdout_perplexity", "forget_perplexity", "retain_perplexity",
                "mia_loss_auc", "mia_zlib_auc", "mia_min_k_plus_plus_auc"}
FAST = EvalSettings(max_new_tokens=6, batch_size=16)


# ----------------------------------------------------------------------------- fixtures ----

@pytest.fixture(scope="module")
def qa_data(tmp_path_factory, demo_dir) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("qa-data")
    sizes = {"forget": 3, "retain": 4, "real_authors": 3, "world_facts": 3}
    out = {}
    for name, n in sizes.items():
        out[name] = write_dataset(d / f"{name}.jsonl", load_qa(demo_dir / f"{name}.jsonl")[:n])
    return out


@pytest.fixture(scope="module")
def text_data(tmp_path_factory, demo_dir) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("text-data")
    sizes = {"forget": 3, "retain": 3, "holdout": 3, "forget_qa": 2, "retain_qa": 2}
    out = {}
    for name, n in sizes.items():
        src = demo_dir / f"text_{name}.jsonl"
        rows = load_qa(src)[:n] if name.endswith("_qa") else load_text(src)[:n]
        out[name] = write_dataset(d / f"{name}.jsonl", rows)
    return out


def qa_cfg(model, data, *, method="ga", method_args=None, eval_cfg=None, run_id="",
           **training) -> TrainConfig:
    return TrainConfig.from_dict({
        "run_id": run_id, "model": str(model), "method": method,
        "method_args": method_args or {},
        "data": {"forget": str(data["forget"]), "retain": str(data["retain"])},
        "training": {"batch_size": 3, "max_steps": 1, "lr": 1e-3, "probe_count": 0,
                     "probe_every": 0, "eval_nll": False, **training},
        "eval": {"sets": {"real_authors": str(data["real_authors"]),
                          "world_facts": str(data["world_facts"])},
                 "max_new_tokens": 6, **(eval_cfg or {})},
    })


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, tiny_model_dir, qa_data) -> Path:
    """A run trained 1 step with the tiny model through create_run + run_foreground; its
    config keeps eval.enabled (the default), so run_foreground evaluates it afterwards."""
    from sga_core.runs.create import create_run
    from sga_core.runs.launch import run_foreground

    root = tmp_path_factory.mktemp("runs")
    run_dir = create_run(qa_cfg(tiny_model_dir, qa_data, run_id="tiny-ga"), root)
    lines: list[str] = []
    status = run_foreground(run_dir, echo=lines.append, poll_s=0.2)
    assert status["state"] == "completed", (run_dir / "train.log").read_text()[-3000:]
    assert status.get("eval_state") == "completed", (
        status, (run_dir / "train.log").read_text()[-3000:])
    assert any("eval:" in line for line in lines)  # the evaluation's progress was echoed
    return run_dir


@pytest.mark.slow
def test_separate_evaluation_gives_the_in_process_numbers(trained_run, tmp_path,
                                                          tiny_model_dir, qa_data):
    """``eval.in_process: false``: the run is evaluated afterwards by its own process
    (eval.log), the older flow, with the same numbers as the in-process evaluation."""
    from sga_core.runs.create import create_run
    from sga_core.runs.launch import run_foreground

    run_dir = create_run(qa_cfg(tiny_model_dir, qa_data, run_id="tiny-ga",
                                eval_cfg={"in_process": False}), tmp_path / "runs")
    status = run_foreground(run_dir, echo=lambda line: None, poll_s=0.2)
    assert status["state"] == "completed" and status["eval_state"] == "completed", status
    assert (run_dir / "eval.log").exists()
    assert "evaluation completed" not in (run_dir / "train.log").read_text()
    separate = read_json(run_dir / "eval" / SUMMARY_FILE)
    in_process = read_json(trained_run / "eval" / SUMMARY_FILE)
    assert separate["in_process"] is False
    for name, m in in_process["metrics"].items():
        if m["value"] is None:
            assert separate["metrics"][name]["value"] is None, name
        else:
            assert separate["metrics"][name]["value"] == pytest.approx(m["value"], rel=1e-4,
                                                                       abs=1e-6), name


@pytest.fixture()
def ref_run(tmp_path, tiny_model_dir, qa_data) -> Path:
    """A retain-reference run folder (created, not trained: the tiny model copied in as its
    model, which is all evaluation needs), with no evaluation yet."""
    from sga_core.runs.create import create_run

    cfg = qa_cfg(tiny_model_dir, qa_data, method="finetune",
                 method_args={"include_forget": False}, run_id="tiny-retain-ref")
    run_dir = create_run(cfg, tmp_path / "refs")
    shutil.copytree(tiny_model_dir, run_dir / "model")
    return run_dir


def check_metrics(summary: dict, expected: set[str]) -> None:
    """Every metric is a finite number, or None with a reason."""
    assert expected <= set(summary["metrics"]), sorted(set(expected) - set(summary["metrics"]))
    for name, m in summary["metrics"].items():
        assert set(m) >= {"value", "reason"}, name
        if m["value"] is None:
            assert isinstance(m["reason"], str) and m["reason"], name
        else:
            assert isinstance(m["value"], float) and math.isfinite(m["value"]), (name, m)


@pytest.fixture()
def count_loads(monkeypatch):
    """Record every model that evaluation loads."""
    loaded: list[str] = []
    real = ev_run.load_model_and_tokenizer

    def spy(spec, *a, **k):
        loaded.append(str(Path(spec).resolve()) if Path(spec).exists() else spec)
        return real(spec, *a, **k)

    monkeypatch.setattr(ev_run, "load_model_and_tokenizer", spy)
    return loaded


# ------------------------------------------------------------------------------ units ------

def test_retain_subset_is_even_and_deterministic():
    assert ev.retain_subset(110, 40) == ev.retain_subset(110, 40)
    sub = ev.retain_subset(110, 40)
    assert len(sub) == len(set(sub)) == 40 and sub[0] == 0 and sub[-1] < 110
    gaps = {b - a for a, b in zip(sub, sub[1:])}
    assert gaps <= {2, 3}  # evenly spaced: 110 / 40 = 2.75
    assert ev.retain_subset(5, 40) == list(range(5))
    assert ev.retain_subset(5, 0) == list(range(5))


def test_qa_batches_pack_candidates(tiny_model_dir, demo_dir):
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_tokenizer

    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    rows = load_qa(demo_dir / "forget.jsonl") + load_qa(demo_dir / "real_authors.jsonl")[:5]
    groups = ev.qa_batches(enc, rows, 16)
    assert sorted(i for g in groups for i in g) == list(range(len(rows)))
    for g in groups:
        assert sum(len(ev.qa_candidates(rows[i])) for i in g) <= 16 or len(g) == 1
    assert len(ev.qa_batches(enc, rows, 1)) == len(rows)  # one row at least per batch


def test_eval_config_paths_and_validation(tmp_path, qa_data):
    cfg_dir = tmp_path / "cfg"
    cfg_dir.mkdir()
    shutil.copy(qa_data["real_authors"], cfg_dir / "ra.jsonl")
    (cfg_dir / "config.yaml").write_text(
        f"method: ga\ndata: {{forget: {qa_data['forget']}}}\n"
        "eval: {sets: {real_authors: ra.jsonl}, reference: ./ref-run, enabled: false}\n")
    cfg = load_config(cfg_dir / "config.yaml")
    assert cfg.eval.enabled is False
    assert cfg.eval.sets == {"real_authors": str((cfg_dir / "ra.jsonl").resolve())}
    assert cfg.eval.reference == str((cfg_dir / "ref-run").resolve())
    assert TrainConfig.from_dict(cfg.to_dict()).eval == cfg.eval  # absolute: round-trips
    plain = TrainConfig.from_dict({"method": "ga", "data": {"forget": "f.jsonl"},
                                   "eval": {"reference": "org/some-model"}})
    assert plain.eval.reference == "org/some-model"  # a model id stays as it is
    assert plain.eval.enabled and plain.eval.max_new_tokens == 48
    assert plain.eval.max_retain_rows == 40
    for bad in ({"sets": "x.jsonl"}, {"sets": {"bad name": "x"}}, {"max_new_tokens": 0},
                {"unknown": 1}):
        with pytest.raises(ConfigError, match="eval"):
            TrainConfig.from_dict({"method": "ga", "data": {"forget": "f"}, "eval": bad})


# ------------------------------------------------------------------- QA, end to end -------

def test_trained_run_is_evaluated_end_to_end(trained_run):
    summary = read_json(trained_run / "eval" / SUMMARY_FILE)
    check_metrics(summary, QA_METRICS)
    assert summary["task"] == "qa" and summary["run_id"] == "tiny-ga"
    assert summary["model_path"] == str(trained_run / "model")
    assert summary["elapsed_s"] > 0 and summary["started_at"] <= summary["ended_at"]
    assert summary["settings"]["max_new_tokens"] == 6
    assert summary["rows"] == {"forget": 3, "retain": 4, "real_authors": 3, "world_facts": 3}
    # the 9 utility components and the forget truth ratios are there
    for key in MODEL_UTILITY_KEYS:
        assert summary["metrics"][key]["value"] is not None, key
    assert summary["metrics"]["model_utility"]["value"] is not None
    assert len(summary["forget_truth_ratios"]) == 3
    assert all(t > 0 for t in summary["forget_truth_ratios"])
    # no reference configured: no Forget Quality, and the reason says so
    fq = summary["metrics"]["forget_quality"]
    assert fq["value"] is None and "reference" in fq["reason"]
    rows = read_jsonl(trained_run / "eval" / PER_SAMPLE_FILE)
    assert len(rows) == 13
    assert all(tuple(r) == QA_SAMPLE_KEYS for r in rows)
    assert [r["index"] for r in rows if r["set"] == "retain"] == [0, 1, 2, 3]
    forget = [r for r in rows if r["set"] == "forget"]
    assert [r["truth_ratio"] for r in forget] == pytest.approx(summary["forget_truth_ratios"])
    for r in rows:
        assert len(r["nll_perturbed"]) == 5 and r["nll_answer"] > 0
        assert 0 <= r["probability"] <= 1 and 0 <= r["rouge_l_recall"] <= 1
        assert (r["nll_paraphrased"] is None) == (r["set"] in ("real_authors", "world_facts"))
    # evaluated in the training process (eval.in_process,
    # docs/decisions/002-in-process-evaluation.md): its lines in train.log
    assert summary["in_process"] is True and not (trained_run / "eval.log").exists()
    assert "evaluation completed" in (trained_run / "train.log").read_text()
    status = read_json(trained_run / "eval" / "status.json")
    assert status["state"] == "completed" and status["error"] is None
    assert ev.eval_status(trained_run)["state"] == "completed"


def test_reference_is_computed_once_then_reused(trained_run, ref_run, count_loads):
    model = str(trained_run / "model")
    ref_model = str(ref_run / "model")
    out = trained_run / "eval-ref"  # leave the run's own eval/ as the auto-eval wrote it
    # 1. the reference run has no evaluation yet: its truth ratios are computed and cached
    s1 = evaluate_run(trained_run, overrides={"reference": str(ref_run)}, out_dir=out)
    assert s1["reference"]["source"] == "computed"
    assert count_loads == [ref_model, model]
    cache = read_json(ref_run / "eval" / REFERENCE_CACHE_FILE)
    (entry,) = cache["entries"].values()
    assert entry["kind"] == "forget_truth_ratios" and len(entry["value"]) == 3
    fq = s1["metrics"]["forget_quality"]
    assert 0 <= fq["value"] <= 1 and fq["reason"] is None
    # 2. evaluated again: the cache answers, the reference model is not loaded
    count_loads.clear()
    s2 = evaluate_run(trained_run, overrides={"reference": str(ref_run)}, out_dir=out)
    assert s2["reference"]["source"] == "reference cache"
    assert count_loads == [model]
    assert s2["metrics"]["forget_quality"] == fq
    # 3. the reference run's own evaluation also serves (here: the same tiny weights, so its
    #    forget truth ratios equal the cached ones)
    own = evaluate_run(ref_run)
    assert own["cache_keys"]["forget_truth_ratios"] == s1["cache_keys"]["forget_truth_ratios"]
    assert own["forget_truth_ratios"] == pytest.approx(entry["value"])
    (ref_run / "eval" / REFERENCE_CACHE_FILE).unlink()
    count_loads.clear()
    s3 = evaluate_run(trained_run, overrides={"reference": str(ref_run / "model")},
                      out_dir=out)
    assert s3["reference"]["source"] == "reference summary"
    assert count_loads == [model]
    assert s3["metrics"]["forget_quality"]["value"] == pytest.approx(fq["value"])
    # the run's own status was not touched by evaluations into another folder
    assert read_json(trained_run / "eval" / "status.json")["state"] == "completed"


def test_forget_quality_reasons_and_same_model(tmp_path, tiny_model_dir, qa_data):
    data = (str(qa_data["forget"]), str(qa_data["retain"]))
    none = evaluate_model(str(tiny_model_dir), tmp_path / "a", *data, settings=FAST)
    from sga_core.evaluation.reference import NO_REFERENCE

    assert none["metrics"]["forget_quality"]["reason"] == NO_REFERENCE
    assert "prepare the project's models" in NO_REFERENCE
    # no real-world sets: Model Utility names the sets that are missing
    mu = none["metrics"]["model_utility"]
    assert mu["value"] is None and "(real_authors, world_facts absent)" in mu["reason"]
    gone = evaluate_model(str(tiny_model_dir), tmp_path / "b", *data,
                          reference=str(tmp_path / "no-such-run"), settings=FAST)
    assert "does not exist" in gone["metrics"]["forget_quality"]["reason"]
    # the model as its own reference: identical truth ratios, KS p-value 1
    bare_ref = tmp_path / "bare-ref"
    shutil.copytree(tiny_model_dir, bare_ref)
    same = evaluate_model(str(tiny_model_dir), tmp_path / "c", *data, reference=str(bare_ref),
                          settings=FAST)
    assert same["metrics"]["forget_quality"]["value"] == pytest.approx(1.0)
    assert (bare_ref / "eval" / REFERENCE_CACHE_FILE).exists()  # cached beside a bare model


def test_failed_evaluation_is_recorded(tmp_path, tiny_model_dir, qa_data):
    from sga_core.runs.create import create_run
    from sga_core.runs.status import read_eval

    run_dir = create_run(qa_cfg(tiny_model_dir, qa_data, run_id="no-model"), tmp_path)
    with pytest.raises(ev.EvalError, match="no saved model"):
        evaluate_run(run_dir)
    st = read_eval(run_dir)
    assert st["state"] == "failed" and "no saved model" in st["error"]


# ---------------------------------------------------------------------------- the CLI -----

def test_cli_eval_bare_model(tmp_path, tiny_model_dir, qa_data, capsys):
    from sga_core.cli import main

    out = tmp_path / "out"
    rc = main(["eval", str(tiny_model_dir), "--forget", str(qa_data["forget"]),
               "--retain", str(qa_data["retain"]),
               "--set", f"real_authors={qa_data['real_authors']}",
               "--set", f"world_facts={qa_data['world_facts']}",
               "--reference", str(tiny_model_dir), "--out", str(out),
               "--max-new-tokens", "4", "--max-retain-rows", "2"])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert "model_utility" in printed and "forget_quality" in printed
    summary = read_json(out / SUMMARY_FILE)
    check_metrics(summary, QA_METRICS)
    assert summary["rows"]["retain"] == 2 and summary["retain_rows_total"] == 4
    assert summary["retain_indices"] == [0, 2]
    assert summary["metrics"]["forget_quality"]["value"] == pytest.approx(1.0)
    assert len(read_jsonl(out / PER_SAMPLE_FILE)) == 3 + 2 + 3 + 3
    # a bare model needs its data and an output folder
    assert main(["eval", str(tiny_model_dir), "--forget", str(qa_data["forget"])]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["eval", str(tiny_model_dir), "--out", str(out), "--set", "oops"]) == 2


# ------------------------------------------------------------------------ text (MUSE) -----

def test_text_eval(tmp_path, tiny_model_dir, text_data, count_loads):
    sets = {k: str(text_data[k]) for k in ("holdout", "forget_qa", "retain_qa")}
    ref = tmp_path / "ref-model"
    shutil.copytree(tiny_model_dir, ref)
    kwargs = dict(sets=sets, reference=str(ref), task="text", settings=FAST)
    s = evaluate_model(str(tiny_model_dir), tmp_path / "t1", str(text_data["forget"]),
                       str(text_data["retain"]), **kwargs)
    check_metrics(s, TEXT_METRICS)
    assert s["task"] == "text" and s["settings"]["verbmem_new_tokens"] == 128
    m = s["metrics"]
    for key in ("forget_verbmem", "forget_knowmem", "retain_knowmem", "mia_auc",
                "holdout_perplexity", "forget_perplexity", "retain_perplexity",
                "mia_loss_auc", "mia_zlib_auc", "mia_min_k_plus_plus_auc"):
        assert m[key]["value"] is not None, key
    for key in ("mia_auc", "mia_loss_auc", "mia_zlib_auc", "mia_min_k_plus_plus_auc"):
        assert 0 <= m[key]["value"] <= 1, key
    # the same weights as reference: the same AUC, PrivLeak 0
    assert s["reference"]["mia_auc"] == pytest.approx(m["mia_auc"]["value"])
    if s["reference"]["mia_auc"] < 1:
        assert m["privleak"]["value"] == pytest.approx(0.0, abs=1e-9)
    else:  # 3 vs 3 texts on a random tiny model can give AUC 1: then 1 - AUC = 0 and
        # PrivLeak (MUSE's convention, docs/spec.md#46-text-metrics-muse-style as corrected) is
        # undefined
        assert m["privleak"]["value"] is None and m["privleak"]["reason"]
    rows = read_jsonl(tmp_path / "t1" / PER_SAMPLE_FILE)
    assert all(tuple(r) == TEXT_SAMPLE_KEYS for r in rows)
    by_set: dict[str, list] = {}
    for r in rows:
        by_set.setdefault(r["set"], []).append(r)
    assert {k: len(v) for k, v in by_set.items()} == {
        "forget": 3, "forget_qa": 2, "retain_qa": 2, "holdout": 3, "retain": 3}
    assert all(r["generated"] is not None and r["min_k_score"] < 0 for r in by_set["forget"])
    assert all(r["perplexity"] > 1 for r in by_set["holdout"])
    # the reference AUC is cached: a second evaluation does not load the reference again
    count_loads.clear()
    s2 = evaluate_model(str(tiny_model_dir), tmp_path / "t2", str(text_data["forget"]),
                        str(text_data["retain"]), **kwargs)
    assert s2["reference"]["source"] == "reference cache"
    assert len(count_loads) == 1
    # without a holdout set: no AUC, no PrivLeak, with reasons; no KnowMem without QA sets
    s3 = evaluate_model(str(tiny_model_dir), tmp_path / "t3", str(text_data["forget"]),
                        None, task="text", settings=FAST)
    check_metrics(s3, TEXT_METRICS)
    assert s3["metrics"]["mia_auc"]["reason"] == "no holdout set (eval.sets.holdout)"
    assert s3["metrics"]["privleak"]["value"] is None
    assert "forget_qa" in s3["metrics"]["forget_knowmem"]["reason"]
    assert s3["metrics"]["retain_perplexity"]["value"] is None


def test_text_rows_without_prompt_are_split():
    row = {"text": " ".join(f"w{i}" for i in range(40)), "prompt": "", "continuation": "x"}
    p, c = ev.prompt_and_continuation(row)
    assert p.split() == [f"w{i}" for i in range(15)] and c.split()[0] == "w15"
    short = {"text": "a b c d", "prompt": "", "continuation": "a b c d"}
    assert ev.prompt_and_continuation(short) == ("a b", "c d")
    assert ev.full_text({"prompt": "Hello", "continuation": "world"}) == "Hello world"


# -------------------------------------------------------------------- runner / prepare ----

class FakeProc:
    def __init__(self, rc=None, pid=4242):
        self.returncode, self.pid = rc, pid

    def poll(self):
        return self.returncode


def test_runner_evaluates_completed_runs_and_waits(tmp_path, tiny_model_dir, qa_data,
                                                   monkeypatch):
    from sga_core.runs import launch, runner
    from sga_core.runs.create import create_run
    from sga_core.runs.status import read_eval, read_run, write_run

    root = tmp_path / "runs"
    done = create_run(qa_cfg(tiny_model_dir, qa_data, run_id="done"), root, mode="queue")
    off = create_run(qa_cfg(tiny_model_dir, qa_data, run_id="off",
                            eval_cfg={"enabled": False}), root, mode="queue")
    for d in (done, off):
        shutil.copytree(tiny_model_dir, d / "model")
        write_run(d, "completed")
    started: list[Path] = []
    evals: dict[Path, FakeProc] = {}

    from sga_core.runs.jobs import base as jobs

    def fake_start(kind, run_dir, req, /, **fields):  # the one start of every kind of job
        assert kind.key == "eval", kind
        started.append(Path(run_dir))
        evals[Path(run_dir)] = FakeProc()
        return evals[Path(run_dir)]

    monkeypatch.setattr(jobs, "start", fake_start)
    r = runner.Runner(root, max_parallel=1)
    r.active = {done: FakeProc(0), off: FakeProc(0)}
    r.reap()
    assert started == [done]  # eval.enabled false: not evaluated
    assert r.busy() == 1 and not r.active
    queued = create_run(qa_cfg(tiny_model_dir, qa_data, run_id="next"), root, mode="queue")
    monkeypatch.setattr(launch, "start", lambda d: pytest.fail("started during the eval"))
    r.start_queued()  # the evaluation holds the only slot
    assert read_run(queued)["state"] == "queued"
    evals[done].returncode = 1  # the evaluation process died without a word
    r.reap()
    assert r.busy() == 0
    st = read_eval(done)
    assert st["state"] == "failed" and "exited with code 1" in st["error"]


@pytest.mark.slow
def test_prepare_evaluates_both_models(tmp_path, tiny_model_dir, qa_data):
    from sga_core.projects.prepare import prepare

    sets = {"real_authors": str(qa_data["real_authors"]),
            "world_facts": str(qa_data["world_facts"])}
    res = prepare(str(qa_data["forget"]), str(qa_data["retain"]), model=str(tiny_model_dir),
                  name="tiny", runs_dir=tmp_path / "runs", echo=lambda m: None,
                  training={"max_steps": 1, "batch_size": 4, "eval_nll": False},
                  eval_sets=sets)
    assert [r["state"] for r in res.values()] == ["completed", "completed"], res
    assert [r["eval_state"] for r in res.values()] == ["completed", "completed"], res
    original = read_json(tmp_path / "runs" / "tiny-original" / "eval" / SUMMARY_FILE)
    retained = read_json(tmp_path / "runs" / "tiny-retain-ref" / "eval" / SUMMARY_FILE)
    cfg = load_config(tmp_path / "runs" / "tiny-original" / "config.yaml")
    assert cfg.eval.reference == str(tmp_path / "runs" / "tiny-retain-ref")
    # the original's Forget Quality used the retain reference's own forget truth ratios
    assert original["reference"]["source"] == "reference summary"
    assert original["metrics"]["forget_quality"]["value"] is not None
    # the reference against itself: the paper's "Retained" row, FQ = KS p-value of identical
    # samples, computed from its own truth ratios without loading a second model
    ref_cfg = load_config(tmp_path / "runs" / "tiny-retain-ref" / "config.yaml")
    assert ref_cfg.eval.reference == str(tmp_path / "runs" / "tiny-retain-ref")
    assert retained["reference"]["source"].startswith("self")
    assert retained["metrics"]["forget_quality"]["value"] == pytest.approx(1.0)
    assert retained["metrics"]["model_utility"]["value"] is not None
    assert not (tmp_path / "runs" / "tiny-retain-ref" / "eval" / REFERENCE_CACHE_FILE).exists()
    assert json.dumps(original)  # strict JSON


def test_an_evaluation_stopped_on_request_is_cancelled_not_failed(trained_run, tmp_path):
    """A cancel during an evaluation (the in-process one raises EvalStopped from its
    progress callback on a CANCEL file or SIGTERM) is recorded as cancelled, with why."""
    import shutil

    from sga_core.evaluation.common import EvalCancelled
    from sga_core.evaluation.run import evaluate_run
    from sga_core.runs.status import read_eval
    from sga_core.train.inprocess import EvalStopped

    assert issubclass(EvalStopped, EvalCancelled)
    run_dir = tmp_path / "copy"
    shutil.copytree(trained_run, run_dir)
    shutil.rmtree(run_dir / "eval")

    def stop(stage, done, total):
        raise EvalStopped("cancelled by request")

    with pytest.raises(EvalStopped):
        evaluate_run(run_dir, stop)
    st = read_eval(run_dir)
    assert st["state"] == "cancelled" and "cancelled by request" in st["error"], st


ENDLESS_EVAL = """
import sys, time
import sga_core.evaluation.run as run

def endless(*args, progress=None, **kwargs):  # an evaluation that never ends by itself
    while True:
        progress("scoring answers", 0, 10)
        time.sleep(0.05)

run.evaluate_model = endless
from sga_core.cli import main
sys.exit(main(["eval", sys.argv[1]]))
"""


def test_an_evaluation_can_be_cancelled_queued_or_running(tmp_path, tiny_model_dir, qa_data):
    """A trial could not stop an evaluation (it held the queue's only slot). cancel_eval
    drops one asked for and not started, and stops a running ``eval`` process, which records
    itself cancelled (not failed); the runner's bookkeeping keeps that."""
    import subprocess
    import sys

    from sga_core.runs import launch, queue
    from sga_core.runs.folder import EVAL_REQUEST
    from sga_core.runs.status import read_eval

    run = _evaluable_run(tmp_path, tiny_model_dir, qa_data, "ev")
    (run / EVAL_REQUEST).write_text("{}")  # asked for, no runner has started it yet
    from sga_core.cli import main

    assert main(["runs", "cancel", "ev", "--runs-dir", str(tmp_path / "runs")]) == 0
    assert read_eval(run)["state"] == "cancelled" and not (run / EVAL_REQUEST).exists()

    proc = subprocess.Popen([sys.executable, "-c", ENDLESS_EVAL, str(run)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert queue.wait_until(lambda: read_eval(run).get("stage") == "scoring answers",
                                timeout=120), read_eval(run)
        assert read_eval(run)["state"] == "running"
        queue.cancel_eval(run)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "evaluation cancelled" in err
    st = launch.finish_eval(run, proc.returncode)  # what the runner does when it ends
    assert st["state"] == "cancelled" and read_eval(run)["state"] == "cancelled"
    assert queue.cancel_eval(run)["state"] == "cancelled"  # nothing left to stop


def _evaluable_run(tmp_path, tiny_model_dir, qa_data, run_id):
    from sga_core.runs.create import create_run
    from sga_core.runs.status import write_run

    run = create_run(qa_cfg(tiny_model_dir, qa_data, run_id=run_id), tmp_path / "runs")
    shutil.copytree(tiny_model_dir, run / "model")
    write_run(run, "completed")
    return run


def test_an_evaluation_cancelled_while_it_starts_is_cancelled_not_failed(
        tmp_path, tiny_model_dir, qa_data):
    """Cancel right after the runner started the evaluation: the SIGTERM may land before
    the process can handle it; the runner's record still says cancelled."""
    from sga_core.runs import launch, queue
    from sga_core.runs.status import read_eval

    run = _evaluable_run(tmp_path, tiny_model_dir, qa_data, "early")
    proc = launch.start_eval(run)
    try:
        queue.cancel_eval(run)
        code = proc.wait(timeout=120)
    finally:
        proc.kill()
    assert code != 0
    st = launch.finish_eval(run, code)
    assert st["state"] == "cancelled" and read_eval(run)["state"] == "cancelled", st


def test_cancelling_a_re_evaluation_keeps_the_earlier_result(tmp_path, tiny_model_dir,
                                                             qa_data):
    """A re-evaluation asked for and not started is dropped; the run's earlier evaluation
    (its summary) stays completed, not 'cancelled'."""
    from sga_core.runs import queue
    from sga_core.runs.folder import EVAL_REQUEST
    from sga_core.runs.status import read_eval, write_eval

    run = _evaluable_run(tmp_path, tiny_model_dir, qa_data, "again")
    write_eval(run, "completed")
    (run / EVAL_REQUEST).write_text("{}")
    assert queue.cancel_eval(run)["state"] == "completed"
    assert read_eval(run)["state"] == "completed" and not (run / EVAL_REQUEST).exists()


def test_an_evaluation_stops_when_its_foreground_caller_is_gone(tmp_path, tiny_model_dir,
                                                                qa_data):
    """An `eval` started for a foreground caller (CALLER_ENV) that no longer exists stops
    at its next progress tick, recorded as cancelled with why."""
    import os
    import socket
    import subprocess
    import sys

    from sga_core.runs.procs import CALLER_ENV
    from sga_core.runs.status import read_eval

    run = _evaluable_run(tmp_path, tiny_model_dir, qa_data, "orphan")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    env = {**os.environ, CALLER_ENV: f"{socket.gethostname()}:{gone.pid}"}
    proc = subprocess.run([sys.executable, "-c", ENDLESS_EVAL, str(run)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 130 and "foreground caller" in proc.stderr, proc.stderr[-2000:]
    st = read_eval(run)
    assert st["state"] == "cancelled" and "foreground caller" in st["error"]
