"""The layer view (docs/token-probabilities.md#the-layer-view): an evaluation writes each forget
answer token read at every block by the logit lens. On a hand-built model whose fact lives in
a middle layer and was removed only at the head (tests/helpers/hidden_fact.py), the view finds
the answer top-1 at the middle layer while the output's probability is near 0; the same view
on untouched models (the Original, which says it; a control never shown it) finds no hidden
answer. The last layer's reading is the model's own output."""

from __future__ import annotations

import pytest

from sga_core.evaluation import EvalSettings, evaluate_model
from sga_core.report.layers import layer_facts, layer_table, layer_words
from sga_core.runs.folder import RunFolder
from tests.helpers.hidden_fact import FACT, LAYERS, MIDDLE, RETAIN, build_hidden_fact_models


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """Each hand-built model evaluated on the fact row into a run folder's eval/."""
    root = tmp_path_factory.mktemp("hidden_fact")
    out = {}
    for name, model in build_hidden_fact_models(root / "models").items():
        run = RunFolder(root / name)
        summary = evaluate_model(str(model), run.eval_dir, [FACT], [RETAIN], task="qa",
                                 settings=EvalSettings(max_new_tokens=4))
        out[name] = (run, summary)
    return out


def _answer(run: RunFolder) -> list[dict]:
    rec = layer_table(run.path)[0]
    return [layer_facts(rec, j) for j in range(len(rec["tokens"]))]


def test_the_layer_view_finds_the_fact_the_head_removed(evaluated):
    run, summary = evaluated["unlearned"]
    assert summary["layer_view"] == {"lens": "logit", "layers": LAYERS}
    answer = _answer(run)
    assert "".join(f["token"] for f in answer).startswith("French")
    for f in answer:
        assert f["layers"] == LAYERS
        assert f["output_p"] < 0.01 and f["last_rank"] > 100  # gone from the output
        assert f["first_top1"] == MIDDLE and f["ranks"][MIDDLE - 1] == 1  # top-1 in the middle
        assert f["probs"][MIDDLE - 1] > 0.9 and f["hidden"]
        assert layer_words(f).endswith(f"but still top-1 at layers {MIDDLE}-{LAYERS - 1} "
                                       f"of {LAYERS}")
        assert f["top1"][MIDDLE - 1] == f["token"] != f["top1"][-1]
    # the output really is low: the token table (the model's own output) agrees
    tokens = run.tokens()[0]
    assert max(tokens["probs"]) < 0.01


def test_untouched_models_show_no_hidden_answer(evaluated):
    for f in _answer(evaluated["original"][0]):  # it says the answer: nothing hidden
        assert f["last_rank"] == 1 and f["output_p"] > 0.9 and not f["hidden"]
        assert f["first_top1"] == MIDDLE  # the same middle layer: formed there
        assert "is the output's top-1" in layer_words(f)
    for f in _answer(evaluated["control"][0]):  # never shown the fact: top-1 at no layer
        assert f["first_top1"] is None and not f["hidden"] and f["last_rank"] > 1
        assert max(f["probs"]) < 0.05
        assert "top-1 at no layer" in layer_words(f)


def test_the_last_layer_is_the_models_output(evaluated):
    worst = 0.0
    for run, _ in evaluated.values():
        layers, tokens = run.layers()[0], run.tokens()[0]
        assert layers["tokens"] == tokens["tokens"]
        assert layers["token_ids"] == tokens["token_ids"]
        worst = max([worst] + [abs(a - b) for a, b in zip(layers["probs"][-1],
                                                          tokens["probs"])])
        # a top-1 by the lens at the last layer is the token table's top-1 alternative
        for j, alts in enumerate(tokens["top"]):
            assert layers["top1"][-1][j] == alts[0][0]
    assert worst < 1e-5


def test_a_text_evaluation_writes_the_continuations_layers(tiny_model_dir, demo_dir, tmp_path):
    """Text: the same rows as the token table (the continuation after the VerbMem prefix,
    no end-of-text token), with the prompt."""
    run = RunFolder(tmp_path / "run")
    summary = evaluate_model(str(tiny_model_dir), run.eval_dir,
                             str(demo_dir / "text_forget.jsonl"),
                             str(demo_dir / "text_retain.jsonl"), task="text",
                             settings=EvalSettings(max_new_tokens=2, max_rows=2,
                                                   max_retain_rows=2))
    assert summary["layer_view"] == {"lens": "logit", "layers": 2}
    assert summary["timings"]["layers_s"] >= 0
    layers, tokens = run.layers(), run.tokens()
    assert [r["index"] for r in layers] == [r["index"] for r in tokens] and len(layers) == 2
    for lay, tok in zip(layers, tokens):
        assert lay["tokens"] == tok["tokens"] and lay["prompt"] == tok["prompt"]
        assert lay["tokens"][-1] != "</s>"
        assert [round(p, 5) for p in lay["probs"][-1]] == [round(p, 5) for p in tok["probs"]]


def test_gpt2_style_blocks_are_read_too(tiny_model_dir):
    """GPT-2's ``transformer.h`` + ``ln_f``: the last block's reading is its output."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    from sga_core.model.encoding import Encoder
    from sga_core.model.forward import token_records
    from sga_core.model.lens import layer_records

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=3, n_head=4,
                                       n_positions=256)).eval()
    enc = Encoder(tok, max_length=256)
    seqs = [enc.qa(FACT["question"], FACT["answer"], role="eval"),
            enc.qa(RETAIN["question"], RETAIN["answer"], role="eval")]
    lens, out = layer_records(model, enc, seqs), token_records(model, enc, seqs)
    for rec, ref in zip(lens, out):
        assert len(rec["probs"]) == 3 and rec["tokens"] == ref["tokens"]
        assert max(abs(a - b) for a, b in zip(rec["probs"][-1], ref["probs"])) < 1e-5


def test_a_model_the_lens_cannot_read_is_said_not_guessed(tiny_model_dir, tmp_path):
    """OPT (``model.decoder``, which may project after its final norm) is not read: the
    evaluation says why in its summary and leaves no layer table, not even an earlier
    one."""
    import torch
    from transformers import AutoTokenizer, OPTConfig, OPTForCausalLM

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    torch.manual_seed(0)
    OPTForCausalLM(OPTConfig(vocab_size=len(tok), hidden_size=32, ffn_dim=64,
                             num_hidden_layers=2, num_attention_heads=4,
                             word_embed_proj_dim=32, max_position_embeddings=256,
                             pad_token_id=tok.pad_token_id)).save_pretrained(tmp_path / "opt")
    tok.save_pretrained(tmp_path / "opt")
    run = RunFolder(tmp_path / "run")
    run.eval_dir.mkdir(parents=True)
    run.layers_path.write_text("{}\n")  # an earlier evaluation's, of another model
    summary = evaluate_model(str(tmp_path / "opt"), run.eval_dir, [FACT], [RETAIN], task="qa",
                             settings=EvalSettings(max_new_tokens=2))
    view = summary["layer_view"]
    assert view["lens"] is None and view["reason"].startswith(
        "the logit lens cannot read OPTForCausalLM: no blocks and final norm")
    assert not run.layers_path.exists() and run.layers() == []
    assert run.tokens()  # the token table is written as before


def test_the_layer_view_can_be_switched_off(tiny_model_dir, tmp_path):
    """eval.layer_view: false (``eval --no-layer-view``): no layer table, said why."""
    from sga_core.config import TrainConfig
    from sga_core.evaluation.settings import settings_from_config

    cfg = TrainConfig.from_dict({"model": str(tiny_model_dir), "method": "ga",
                                 "data": {"forget": "f.jsonl"}, "eval": {"layer_view": False}})
    st = settings_from_config(cfg)
    assert st.layer_view is False
    assert settings_from_config(cfg, {"layer_view": True}).layer_view is True
    run = RunFolder(tmp_path / "run")
    summary = evaluate_model(str(tiny_model_dir), run.eval_dir, [FACT], [RETAIN], task="qa",
                             settings=EvalSettings(max_new_tokens=2, layer_view=False))
    assert summary["layer_view"] == {"lens": None,
                                     "reason": "switched off (eval.layer_view: false)"}
    assert "layers_s" not in summary["timings"]
    assert not run.layers_path.exists() and run.tokens()
