"""Multiple-choice sets in an evaluation: a WMDP-shaped text project under the ``wmdp``
protocol gets WMDP and MMLU accuracy as its columns (no MUSE metrics), and an MMLU set in a
QA project gets ``mmlu_accuracy`` beside TOFU's metrics; each value is the scorer's accuracy
on the set's rows, each row's per-sample record says which choice the model took."""

from __future__ import annotations

import pytest

from sga_core.evaluation import EvalSettings
from sga_core.evaluation.choices import choice_loglikelihoods
from sga_core.evaluation.run import evaluate_model, load_model_and_tokenizer
from sga_core.fileio import read_jsonl
from sga_core.metrics import multiple_choice as mc
from sga_core.metrics.catalog import TEXT, table_columns
from sga_core.model.encoding import Encoder

BIO = [{"question": f"Bio question {i}?", "choices": ["alpha", "beta", "gamma", "delta"],
        "answer": i % 4} for i in range(5)]
MMLU = [{"question": f"General question {i}?", "subject": "college_biology",
         "choices": ["one", "two", "three", "four"], "answer": (i + 1) % 4} for i in range(4)]
TEXTS = [{"text": f"A forget corpus paper number {i} about a virus and its genes."}
         for i in range(4)]


def expected(model_dir, name: str, rows: list[dict]) -> float:
    model, tok = load_model_and_tokenizer(str(model_dir))
    lls = choice_loglikelihoods(model, Encoder(tok), name, rows)
    return mc.accuracy(lls, [r["answer"] for r in rows]).value


def test_a_wmdp_project_reports_wmdp_and_mmlu_accuracy(tiny_model_dir, tmp_path):
    out = tmp_path / "eval"
    summ = evaluate_model(str(tiny_model_dir), out, TEXTS, TEXTS[:2],
                          {"wmdp_bio": BIO, "mmlu": MMLU}, reference=None, task="text",
                          settings=EvalSettings(protocol="wmdp", batch_size=4))
    m = summ["metrics"]
    assert m["wmdp_bio_accuracy"]["value"] == pytest.approx(
        expected(tiny_model_dir, "wmdp_bio", BIO), abs=1e-12)
    assert m["mmlu_accuracy"]["value"] == pytest.approx(
        expected(tiny_model_dir, "mmlu", MMLU), abs=1e-12)
    assert m["wmdp_cyber_accuracy"]["value"] is None
    assert m["wmdp_cyber_accuracy"]["reason"] == "no wmdp_cyber set (eval.sets.wmdp_cyber)"
    # WMDP's protocol scores questions, not MUSE's memorisation: no VerbMem, no MIA
    assert not {"forget_verbmem", "mia_auc", "privleak"} & set(m)
    assert "mmlu_accuracy" in [c.name for c in table_columns(TEXT, ["wmdp"])]
    rows = [r for r in read_jsonl(out / "per_sample.jsonl") if r["set"] == "wmdp_bio"]
    assert len(rows) == len(BIO)
    assert rows[0]["prompt"] == mc.prompt("wmdp_bio", BIO[0])
    assert rows[0]["reference"] == "A. alpha"
    assert sum(r["mc_correct"] for r in rows) / len(rows) == m["wmdp_bio_accuracy"]["value"]


def test_an_mmlu_set_in_a_qa_project_is_scored_beside_tofus_metrics(tiny_model_dir,
                                                                     tmp_path):
    qa = [{"question": "Who wrote the book?", "answer": "The author did."}] * 2
    summ = evaluate_model(str(tiny_model_dir), tmp_path / "eval", qa, qa, {"mmlu": MMLU},
                          reference=None, task="qa",
                          settings=EvalSettings(batch_size=4, max_new_tokens=4))
    m = summ["metrics"]
    assert m["mmlu_accuracy"]["value"] == pytest.approx(
        expected(tiny_model_dir, "mmlu", MMLU), abs=1e-12)
    assert "mmlu_rouge" not in m and "forget_rouge" in m


def test_a_qa_project_takes_an_mmlu_set_and_says_what_it_is_for(tmp_path):
    import json

    from sga_core.data import DataError
    from sga_core.projects.create import create_project

    forget = tmp_path / "forget.jsonl"
    forget.write_text(json.dumps({"question": "Who?", "answer": "Them."}) + "\n")
    mmlu = tmp_path / "mmlu.jsonl"
    mmlu.write_text("".join(json.dumps(r) + "\n" for r in MMLU))
    p = create_project("qa", forget, root=tmp_path / "ws")
    info = p.add_eval_set("mmlu", mmlu)
    assert info["kind"] == "mc" and info["role"] == "multiple-choice"
    assert "mmlu_accuracy" in info["what"]
    with pytest.raises(DataError, match="evaluation set, not forget data"):
        create_project("mc", mmlu, root=tmp_path / "ws")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**MMLU[0], "answer": "B"}) + "\n")
    with pytest.raises(DataError, match="index of the right choice"):
        p.add_eval_set("bad", bad)
    assert set(p.eval_sets()) == {"mmlu"}  # the refused set was not saved
