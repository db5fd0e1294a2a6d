"""Stress tests of text (MUSE-style) runs (docs/stress-tests.md#text-data): each forget
passage scored as the text evaluation's VerbMem and token table see it, relearning on whole
passages, the prompt attacks not applicable."""

from __future__ import annotations

import json
import math

import pytest

from sga_core.stress import StressSettings
from tests.helpers.stress import tiny_run

pytestmark = pytest.mark.slow


def test_a_text_run_is_stress_tested_on_its_passages(tmp_path, tiny_model_dir, demo_dir):
    from sga_core.evaluation.run import load_model_and_tokenizer
    from sga_core.evaluation.settings import EvalSettings
    from sga_core.evaluation.text import drop_end_token, token_rows
    from sga_core.model.forward import row_token_table
    from sga_core.runs.folder import RunFolder
    from sga_core.stress.run import stress_run

    run = tiny_run(tmp_path / "runs", tiny_model_dir, demo_dir, "text-run", text=True)
    st = StressSettings(seeds=[0, 1], relearn_steps=[1, 2], relearn_share=0.2, rouge=False)
    res = stress_run(run, ["relearn", "benign", "quant8", "paraphrase", "fewshot",
                           "roleplay"], st, overrides={"original": str(tiny_model_dir)})
    assert set(res) == {"relearn-1", "relearn-2", "benign-1", "benign-2", "quant8",
                        "paraphrase", "fewshot", "roleplay"}
    assert all(r["kind"] == "text" for r in res.values())
    n = 10  # the demo's text passages
    for seed_case in res["relearn-2"]["cases"]:
        assert len(seed_case["attack_rows"]) == 2 and seed_case["attack_set"] == "forget"
        assert sorted(seed_case["attack_rows"] + seed_case["eval_rows"]) == list(range(n))
    assert res["benign-1"]["cases"][0]["attack_set"] == "retain"
    assert res["benign-1"]["cases"][0]["eval_rows"] == list(range(n))
    for name in ("paraphrase", "fewshot", "roleplay"):
        assert res[name]["recovery"] is None
        assert res[name]["recovery_reason"].startswith("not applicable: text data")
    # each passage scored exactly as the run's evaluation's token table holds it: the
    # VerbMem prefix, the continuation cut to the VerbMem tokens, no end-of-text token
    cfg = RunFolder(run).config()
    proto, es, _ = EvalSettings(protocol=cfg.eval.protocol).resolve()
    assert res["quant8"]["settings"]["verbmem_new_tokens"] == proto.verbmem_new_tokens
    rows = [json.loads(line) for line in (demo_dir / "text_forget.jsonl").open()]
    m, tok = load_model_and_tokenizer(str(tiny_model_dir))
    table = drop_end_token(row_token_table(m, es.encoder(tok, m),
                                           token_rows(tok, rows, proto.verbmem_new_tokens),
                                           "text"))
    samples = [s for s in res["quant8"]["samples"]]
    assert [s["index"] for s in samples] == list(range(n))
    for s, t in zip(samples, table):
        assert [x["token"] if isinstance(x, dict) else x for x in
                (s["tokens"]["tokens"])] == t["tokens"]
        mean_logp = sum(math.log(p) for p in t["probs"]) / len(t["probs"])
        assert s["prob_unlearned"] == pytest.approx(math.exp(mean_logp), rel=1e-4)


def test_text_rouge_compares_a_generated_continuation(tmp_path, tiny_model_dir, demo_dir):
    """With ROUGE on, each passage's prefix is continued greedily as raw text for up to the
    VerbMem tokens and compared with the true continuation's."""
    from sga_core.evaluation.settings import EvalSettings
    from sga_core.stress.run import stress_model

    rows = [json.loads(line) for line in (demo_dir / "text_forget.jsonl").open()][:2]
    res = stress_model(str(tiny_model_dir), tmp_path / "out", rows, attacks=["quant8"],
                       settings=StressSettings(rouge=True),
                       eval_settings=EvalSettings(protocol="demo"))["quant8"]
    assert res["settings"]["max_new_tokens"] == res["settings"]["verbmem_new_tokens"]
    for s in res["samples"]:
        assert isinstance(s["generated"], str) and 0.0 <= s["rouge"] <= 1.0
        assert s["question"] is None  # asked with its own prefix


def test_relearning_on_text_trains_on_the_whole_passage(tiny_model_dir, demo_dir):
    from sga_core.evaluation.run import load_model_and_tokenizer
    from sga_core.evaluation.settings import EvalSettings
    from sga_core.model.encoding import IGNORE
    from sga_core.stress import StressContext
    from sga_core.stress.rows import text_rows

    rows = [json.loads(line) for line in (demo_dir / "text_forget.jsonl").open()][:2]
    m, tok = load_model_and_tokenizer(str(tiny_model_dir))
    enc = EvalSettings().resolve()[1].encoder(tok, m)
    ctx = StressContext(m, enc, text_rows(tok, rows, 8), [], StressSettings(), kind="text")
    seq = ctx.train_seq(ctx.forget_rows[0])
    scored = [t for t in seq.labels if t != IGNORE]
    passage = tok(rows[0]["text"], add_special_tokens=False)["input_ids"]
    assert scored == passage + [enc.eos_id]
    assert ctx.forget_rows[0]["question"] == rows[0]["prompt"]
    assert len(tok(ctx.forget_rows[0]["answer"], add_special_tokens=False)["input_ids"]) <= 9


def test_mixed_kinds_are_refused_with_which_is_which(tmp_path, tiny_model_dir, demo_dir):
    from sga_core.evaluation.common import EvalError
    from sga_core.stress.run import stress_model

    with pytest.raises(EvalError, match="retain data is text but the forget data is qa"):
        stress_model(str(tiny_model_dir), tmp_path / "out", str(demo_dir / "forget.jsonl"),
                     str(demo_dir / "text_retain.jsonl"), attacks=["quant8"])
