"""The metric catalog (docs/spec.md#4-metrics): evaluation writes exactly the catalog's names, each
with a value or a reason, on QA and on text data; the Results table takes its columns from the
catalog (so a tiny text run shows values in its text columns); adding a metric is a function
plus one catalog entry.

Everything runs on the tiny random model from ``conftest`` with a few demo rows; the
expected names are derived from the catalog, so a metric the evaluation forgets (or invents)
fails here.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from sga_core.config import TrainConfig
from sga_core.data import load_qa, load_text, write_dataset
from sga_core.evaluation import (
    PER_SAMPLE_FILE,
    QA_SAMPLE_KEYS,
    TEXT_SAMPLE_KEYS,
    EvalSettings,
    evaluate_model,
    evaluate_run,
)
from sga_core.fileio import read_jsonl
from sga_core.metrics import catalog
from sga_core.metrics.catalog import (
    HIGHER,
    LOWER,
    QA,
    TEXT,
    ZERO,
    MetricSpec,
    spec_of,
    table_columns,
)
from sga_core.metrics.context import GREEDY_ANSWERS
from sga_core.metrics.result import MetricResult
from sga_core.report.ranking import best_values
from sga_core.report.table import results_table

FAST = EvalSettings(max_new_tokens=4, batch_size=16)
QA_EXTRA = ("real_authors", "world_facts")
TEXT_EXTRA_QA, TEXT_EXTRA_TEXT = ("more_qa",), ("more_text",)


def write_rows(folder: Path, name: str, rows: list[dict]) -> str:
    return str(write_dataset(folder / f"{name}.jsonl", rows))


@pytest.fixture(scope="module")
def qa_files(tmp_path_factory, demo_dir) -> dict[str, str]:
    d = tmp_path_factory.mktemp("catalog-qa")
    sizes = {"forget": 3, "retain": 3, "real_authors": 2, "world_facts": 2}
    out = {n: write_rows(d, n, load_qa(demo_dir / f"{n}.jsonl")[:k]) for n, k in sizes.items()}
    # the MIA attacks' non-members: question + answer rows, as TOFU's holdout10
    out["holdout"] = write_rows(d, "holdout", [{"question": r["question"], "answer": r["answer"]}
                                               for r in load_qa(demo_dir / "retain.jsonl")[3:6]])
    return out


@pytest.fixture(scope="module")
def text_files(tmp_path_factory, demo_dir) -> dict[str, str]:
    """The demo's text sets, plus one extra QA set and one extra text set (the families)."""
    d = tmp_path_factory.mktemp("catalog-text")
    out = {}
    for n in ("forget", "retain", "holdout"):
        out[n] = write_rows(d, n, load_text(demo_dir / f"text_{n}.jsonl")[:3])
    for n in ("forget_qa", "retain_qa"):
        out[n] = write_rows(d, n, load_qa(demo_dir / f"text_{n}.jsonl")[:2])
    out["more_qa"] = write_rows(d, "more_qa", load_qa(demo_dir / "text_retain_qa.jsonl")[2:4])
    out["more_text"] = write_rows(d, "more_text", load_text(demo_dir / "text_retain.jsonl")[3:5])
    return out


def expected_names(kind: str, qa_sets=(), text_sets=()) -> set[str]:
    return {i.name for i in catalog.expand(kind, qa_sets, text_sets)}


def check_summary(summary: dict, kind: str, expected: set[str]) -> None:
    """Every catalog metric is there with a finite value or a reason; nothing else is."""
    metrics = summary["metrics"]
    assert set(metrics) == expected, (sorted(expected - set(metrics)),
                                      sorted(set(metrics) - expected))
    for name, m in metrics.items():
        assert spec_of(name, kind).kind == kind
        assert m["name"] == name
        if m["value"] is None:
            assert isinstance(m["reason"], str) and m["reason"], name
        else:
            assert isinstance(m["value"], float) and math.isfinite(m["value"]), (name, m)


def check_samples(out: Path, summary: dict, instances, keys: tuple[str, ...]) -> None:
    """Each metric with a per-sample key fills it on the rows of the sets it reads."""
    rows = read_jsonl(out / PER_SAMPLE_FILE)
    assert rows and all(tuple(r) == keys for r in rows)
    for inst in instances:
        key = inst.spec.sample_key
        if not key or summary["metrics"][inst.name]["value"] is None:
            continue
        for s in inst.on:
            mine = [r for r in rows if r["set"] == s]
            assert mine and all(r[key] is not None for r in mine), (inst.name, s, key)


# ------------------------------------------------------------------------- the catalog ----

def test_the_catalog_is_sound_and_gives_the_table_columns():
    assert catalog.problems() == []
    assert [c.label for c in table_columns(QA)] == [
        "FQ", "MU", "forget ROUGE-L", "retain ROUGE-L", "forget prob", "retain prob"]
    assert [(c.label, c.name) for c in table_columns(TEXT)] == [
        ("VerbMem", "forget_verbmem"), ("KnowMem forget", "forget_knowmem"),
        ("KnowMem retain", "retain_knowmem"), ("PrivLeak", "privleak"),
        ("PPL", "holdout_perplexity")]
    assert spec_of("privleak", TEXT).direction == ZERO
    assert spec_of("forget_quality", QA).direction == HIGHER
    assert spec_of("forget_rouge", QA).direction == LOWER
    # families: one entry, a name per evaluation set
    assert spec_of("real_authors_probability", QA).name == "{set}_probability"
    assert spec_of("forget_probability", QA).name == "forget_probability"
    assert spec_of("books_knowmem", TEXT).name == "{set}_knowmem"
    with pytest.raises(KeyError, match="catalog"):
        spec_of("made_up_metric", QA)
    with pytest.raises(KeyError):
        spec_of("forget_verbmem", QA)  # a text metric is not a QA one
    with pytest.raises(ValueError, match="twice"):
        catalog.expand(TEXT, qa_sets=["retain"])  # retain_knowmem would be written twice


def test_a_produced_name_outside_the_catalog_is_an_error():
    from sga_core.evaluation.compute import summary_metrics

    insts = catalog.expand(QA)
    results = {"forget_rouge": MetricResult("forget_rouge", 0.5),
               "made_up": MetricResult("made_up", 1.0)}
    with pytest.raises(KeyError, match="made_up"):
        summary_metrics(QA, insts, results)


def test_best_values_follow_each_columns_direction():
    rows = [{"run": "Original", "PrivLeak": -90.0, "PPL": 1.0, "KnowMem retain": 1.0},
            {"run": "a", "PrivLeak": -40.0, "PPL": 9.0, "KnowMem retain": 0.2},
            {"run": "b", "PrivLeak": 12.0, "PPL": 7.0, "KnowMem retain": 0.3},
            {"run": "c", "PrivLeak": None, "PPL": 8.0, "KnowMem retain": 0.1}]
    best = best_values(rows, TEXT)
    assert best == {"PrivLeak": 12.0, "PPL": 7.0, "KnowMem retain": 0.3}


# ------------------------------------------------------------- a real tiny evaluation ----

def test_qa_evaluation_writes_every_catalog_metric(tmp_path, tiny_model_dir, qa_files):
    ref = tmp_path / "ref"
    shutil.copytree(tiny_model_dir, ref)
    out = tmp_path / "qa"
    s = evaluate_model(str(tiny_model_dir), out, qa_files["forget"], qa_files["retain"],
                       {n: qa_files[n] for n in (*QA_EXTRA, "holdout")}, str(ref), task="qa",
                       settings=replace(FAST, mia_gradnorm=True))  # GradNorm too
    check_summary(s, QA, expected_names(QA, QA_EXTRA))
    assert all(m["value"] is not None for m in s["metrics"].values())  # all computable here
    check_samples(out, s, catalog.expand(QA, QA_EXTRA), QA_SAMPLE_KEYS)
    # without the real-world sets and the reference: the families are not there, the
    # others are, with reasons
    bare = evaluate_model(str(tiny_model_dir), tmp_path / "bare", qa_files["forget"], None,
                          task="qa", settings=FAST)
    check_summary(bare, QA, expected_names(QA))
    assert bare["metrics"]["retain_rouge"]["reason"] == "no retain rows (data.retain)"
    assert "reference" in bare["metrics"]["forget_quality"]["reason"]


@pytest.fixture(scope="module")
def text_run(tmp_path_factory, tiny_model_dir, text_files) -> Path:
    """A text run folder (the tiny model as its model, a copy of it as the retain
    reference), evaluated by evaluate_run."""
    from sga_core.runs.create import create_run

    tmp = tmp_path_factory.mktemp("text-run")
    ref = tmp / "ref-model"
    shutil.copytree(tiny_model_dir, ref)
    cfg = TrainConfig.from_dict({
        "run_id": "tiny-text", "model": str(tiny_model_dir), "method": "ga",
        "data": {"task": "text", "forget": text_files["forget"],
                 "retain": text_files["retain"]},
        "training": {"batch_size": 2, "max_steps": 1, "probe_count": 0, "eval_nll": False},
        "eval": {"sets": {n: text_files[n] for n in ("holdout", "forget_qa", "retain_qa",
                                                      "more_qa", "more_text")},
                 "reference": str(ref), "max_new_tokens": 4}})
    run_dir = create_run(cfg, tmp / "runs")
    shutil.copytree(tiny_model_dir, run_dir / "model")
    evaluate_run(run_dir)
    return run_dir


def test_text_evaluation_writes_every_catalog_metric(text_run):
    from sga_core.evaluation import read_summary

    s = read_summary(text_run)
    check_summary(s, TEXT, expected_names(TEXT, TEXT_EXTRA_QA, TEXT_EXTRA_TEXT))
    for name in ("forget_verbmem", "forget_knowmem", "retain_knowmem", "more_qa_knowmem",
                 "mia_auc", "holdout_perplexity", "more_text_perplexity"):
        assert s["metrics"][name]["value"] is not None, name
    check_samples(text_run / "eval", s, catalog.expand(TEXT, TEXT_EXTRA_QA, TEXT_EXTRA_TEXT),
                  TEXT_SAMPLE_KEYS)


def test_results_table_of_a_text_run_shows_its_metrics(text_run):
    from sga_core.runs.folder import manifest

    class Project:  # what results_table reads of a project (no published models: meta)
        name, meta = "tiny", {}
        forget_hash = manifest(text_run)["forget"]["rows_hash"]

    (row,) = results_table(Project(), text_run.parent, TEXT)
    assert row["run_id"] == "tiny-text"
    for col in table_columns(TEXT):
        if col.name == "privleak":  # 3 vs 3 random texts can give AUC 1: then a reason
            assert row[col.label] is not None or row[f"{col.label} (why)"]
        else:
            assert row[col.label] is not None, (col.label, row)
    # each text metric has a direction: a best once a second run differs beyond its
    # negligible gap (one run alone has nothing to be best against; a perplexity's gap is
    # 10% of it, so +1 on a random model's thousands is no difference)
    other = {**row, "run": "other", "VerbMem": row["VerbMem"] + 1,
             "KnowMem forget": row["KnowMem forget"] + 1, "PPL": row["PPL"] * 2}
    assert set(best_values([row, other], TEXT)) >= {"VerbMem", "KnowMem forget", "PPL"}


# ------------------------------------------------------------------- adding a metric ----

def _answer_words(x) -> MetricResult:
    """A new metric for the test: the mean number of words of the greedy answers."""
    per = [float(len(g.split())) for g in x.data.generated]
    return MetricResult(x.name, sum(per) / len(per), per)


def test_adding_a_metric_is_a_function_and_one_entry(tmp_path, tiny_model_dir, qa_files,
                                                     monkeypatch):
    entry = MetricSpec("{set}_answer_words", QA, "{set} words", LOWER,
                       "mean words in the greedy answers", "this test", (GREEDY_ANSWERS,),
                       _answer_words, on=(catalog.EACH_QA_SET,), sample_key="answer_words")
    monkeypatch.setattr(catalog, "CATALOG", catalog.CATALOG + (entry,))
    assert catalog.problems() == []
    out = tmp_path / "qa"
    s = evaluate_model(str(tiny_model_dir), out, qa_files["forget"], qa_files["retain"],
                       {n: qa_files[n] for n in QA_EXTRA}, task="qa", settings=FAST)
    check_summary(s, QA, expected_names(QA, QA_EXTRA))
    for n in QA_EXTRA:
        assert s["metrics"][f"{n}_answer_words"]["value"] >= 0
    rows = read_jsonl(out / PER_SAMPLE_FILE)
    assert all(tuple(r) == QA_SAMPLE_KEYS + ("answer_words",) for r in rows)
    assert all((r["answer_words"] is None) == (r["set"] not in QA_EXTRA) for r in rows)
