"""Directional ablation (sga_core/stress/attacks/ablate.py, docs/stress-tests.md#directional-
ablation) on a hand-built pair: an Original fine-tuned on the demo's forget answers, and an
"unlearned" copy whose layer-2 MLP bias adds ``ALPHA * v`` to the residual stream (4 layers,
width 64), which drowns the answers. The attack must find ``v`` at layer 2 (and nothing
at layer 1, where the two models agree), bring the answers back on rows the direction was
not fit on, leave the model as it was, and find nothing in a model equal to its Original."""

from __future__ import annotations

import pytest
import torch

from sga_core.params import ConfigError
from sga_core.stress import StressSettings
from sga_core.stress.attacks.ablate import NO_ORIGINAL, Ablate, ablated, activation_sums, direction
from tests.helpers.stress import file_hashes

pytestmark = pytest.mark.slow

LAYER, ALPHA, WIDTH = 2, 30.0, 64


@pytest.fixture(scope="module")
def pair(tmp_path_factory, demo_dir):
    """(Original folder, unlearned folder, v): see the module's docstring."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    from sga_core.evaluation.settings import EvalSettings
    from sga_core.fileio import read_jsonl
    from sga_core.model.encoding import collate
    from sga_core.model.tiny import build_tiny_model

    root = tmp_path_factory.mktemp("ablate")
    orig = build_tiny_model(root / "original", layers=4, hidden=WIDTH)
    tok, model = AutoTokenizer.from_pretrained(orig), AutoModelForCausalLM.from_pretrained(orig)
    enc = EvalSettings().resolve()[1].encoder(tok, model)
    rows = read_jsonl(demo_dir / "forget.jsonl")
    batch = collate([enc.qa(r["question"], r["answer"]) for r in rows], enc.pad_id)
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(80):  # the Original learns the forget answers
        model(**batch).loss.backward()
        opt.step()
        opt.zero_grad()
    model.save_pretrained(orig)
    cfg = model.config
    cfg.mlp_bias = True
    unlearned = LlamaForCausalLM(cfg)
    unlearned.load_state_dict(model.state_dict(), strict=False)
    v = torch.randn(WIDTH, generator=torch.Generator().manual_seed(1))
    v = v / v.norm()
    with torch.no_grad():
        for name, p in unlearned.named_parameters():
            if name.endswith("bias"):
                p.zero_()
        unlearned.model.layers[LAYER - 1].mlp.down_proj.bias.copy_(ALPHA * v)
    un = root / "unlearned"
    unlearned.save_pretrained(un)
    tok.save_pretrained(un)
    return orig, un, v


def context(model_dir, original, demo_dir, **settings):
    from sga_core.evaluation.run import load_model_and_tokenizer
    from sga_core.evaluation.settings import EvalSettings
    from sga_core.fileio import read_jsonl
    from sga_core.stress.context import StressContext

    m, tok = load_model_and_tokenizer(str(model_dir))
    return StressContext(m, EvalSettings().resolve()[1].encoder(tok, m),
                         read_jsonl(demo_dir / "forget.jsonl"), [],
                         StressSettings(rouge=False, **settings), original=str(original))


@pytest.mark.parametrize("tokens", ["prompt", "last", "all"])
def test_the_direction_found_is_the_one_the_unlearning_added(pair, demo_dir, tokens):
    orig, un, v = pair
    ctx = context(un, orig, demo_dir, ablate_tokens=tokens)
    acts = activation_sums(ctx, [1, LAYER, 3])
    d, norm = direction(acts, 1, list(range(5)))
    cos = float(torch.dot(d, v))
    assert cos > 1 - 1e-5 and norm == pytest.approx(ALPHA, rel=1e-4)  # v (unlearned - Original)
    # before the layer the bias writes at, the two models read the prompts alike
    none, why = direction(acts, 0, list(range(5)))
    assert none is None and why.startswith("no direction")
    # after it, v and what the next block made of it (a direction a little off v)
    later, _ = direction(acts, 2, list(range(5)))
    assert 0.9 < float(torch.dot(later, v)) < cos


def test_the_positions_averaged_are_the_prompts_its_last_token_or_all(pair, demo_dir):
    """Each row's sum equals a hand sum of the block's output hidden states (transformers'
    ``hidden_states[2]``) over the positions named: the prompt without its first token, the
    prompt's last token, or every token but the first."""
    from sga_core.stress.scoring import scored_seqs

    orig, un, _ = pair
    for tokens in ("prompt", "last", "all"):
        ctx = context(un, orig, demo_dir, ablate_tokens=tokens)
        acts = activation_sums(ctx, [LAYER])["unlearned"]
        rows = ctx.forget_rows[:3]
        seqs = scored_seqs(ctx.enc, [r["question"] for r in rows], [r["answer"] for r in rows])
        for i, s in enumerate(seqs):
            p = next(j for j, t in enumerate(s.labels) if t != -100)  # the first answer token
            lo, hi = {"prompt": (1, p), "last": (p - 1, p), "all": (1, len(s))}[tokens]
            with torch.no_grad():
                hs = ctx.model(input_ids=torch.tensor([s.input_ids]),
                               output_hidden_states=True).hidden_states[LAYER][0]
            sums, count = acts[i]
            assert count == hi - lo
            assert torch.allclose(sums[0].float(), hs[lo:hi].sum(0), atol=1e-3)


def test_ablation_projects_the_direction_out_of_every_layer(pair, demo_dir):
    from sga_core.model.lens import block_outputs, lens_parts

    orig, un, v = pair
    ctx = context(un, orig, demo_dir)
    blocks = lens_parts(ctx.model)[0]
    ids = torch.tensor([ctx.enc.qa("Q?", "A.").input_ids])
    seen = []
    with ablated(blocks, v), block_outputs(blocks) as box, torch.no_grad():
        hook = blocks[0].register_forward_pre_hook(
            lambda m, args, kw: seen.append(args[0] if args else kw["hidden_states"]),
            with_kwargs=True)
        ctx.model(input_ids=ids)
        hook.remove()
    # the embeddings (the first block's input) and every block's output
    assert all(float((h @ v).abs().max()) < 1e-4 for h in [*seen, *box["h"]])
    with block_outputs(blocks) as box, torch.no_grad():  # the hooks are gone
        ctx.model(input_ids=ids)
    plain = box["h"]
    assert float((plain[LAYER - 1] @ v).abs().max()) > 1.0
    # from layer 3 on only: the blocks before it untouched
    with ablated(blocks, v, 3), block_outputs(blocks) as box, torch.no_grad():
        ctx.model(input_ids=ids)
    assert all(torch.equal(a, b) for a, b in zip(box["h"][:2], plain[:2]))
    assert all(float((h @ v).abs().max()) < 1e-4 for h in box["h"][2:])


@pytest.mark.parametrize("split", ["half", "loo"])
def test_ablating_it_brings_the_answers_back_on_held_out_rows(pair, demo_dir, tmp_path,
                                                               split):
    from sga_core.stress.run import stress_model

    orig, un, _ = pair
    before = file_hashes(un)
    res = stress_model(str(un), tmp_path / "out", str(demo_dir / "forget.jsonl"),
                       original=str(orig), attacks=["ablate", "quant8"],
                       settings=StressSettings(seeds=[0, 1], rouge=False, ablate_split=split))
    abl = res["ablate"]
    assert abl["recovery"] > 0.5, abl["summary"]
    head = abl["summary"]["probability"]
    assert head["original"] - head["unlearned"] > 0.5  # the bias drowned the answers
    for case in abl["cases"]:
        assert case["info"]["layer"] == LAYER and case["info"]["gap_norm"] == \
            pytest.approx(ALPHA, rel=1e-3)
        if split == "half":  # fit on some rows, measured on the others
            assert case["attack_rows"] and case["eval_rows"]
            assert not set(case["attack_rows"]) & set(case["eval_rows"])
            assert case["info"]["fit_rows"] == len(case["attack_rows"])
        else:
            assert case["eval_rows"] == list(range(10)) and case["info"]["fit_rows"] == 9
    assert len(abl["cases"]) == (2 if split == "half" else 1)
    # the attacked answers' token and layer records, as the Token page reads them
    assert all(s["tokens"]["layers"]["probs"] and len(s["tokens"]["layers"]["probs"]) == 4
               for s in abl["samples"])
    # the model is left as it was: in its folder, and in memory (quant8 ran after it)
    assert file_hashes(un) == before
    assert abs(res["quant8"]["recovery"]) < 0.05


def test_several_layers_are_cases_of_one_result(pair, demo_dir, tmp_path):
    from sga_core.stress.run import stress_model

    orig, un, _ = pair
    res = stress_model(str(un), tmp_path / "out", str(demo_dir / "forget.jsonl"),
                       original=str(orig), attacks=["ablate"],
                       settings=StressSettings(seeds=[0], rouge=False,
                                               ablate_layers=[1, LAYER]))["ablate"]
    narrow = stress_model(str(un), tmp_path / "narrow", str(demo_dir / "forget.jsonl"),
                          original=str(orig), attacks=["ablate"],
                          settings=StressSettings(seeds=[0], rouge=False,
                                                  ablate_where="from_layer"))["ablate"]
    assert narrow["recovery"] > 0.5 and narrow["cases"][0]["info"]["ablated"] == "from_layer"
    assert Ablate.case_words(narrow["cases"][0]["info"]).endswith("projected out of layer 2 on")
    labels = {c["label"]: c for c in res["cases"]}
    assert set(labels) == {"layer 1 seed 0", "layer 2 seed 0"}
    assert Ablate.case_words(labels["layer 2 seed 0"]["info"]) == (
        "direction at layer 2 (fit on 5 other rows, prompt tokens; mean activations 30 "
        "apart), projected out of every layer")
    assert labels["layer 1 seed 0"]["reason"].startswith("no direction")
    assert labels["layer 2 seed 0"]["metrics"]["probability"]["recovery"] > 0.5


def test_a_model_equal_to_its_original_has_nothing_to_ablate(pair, demo_dir, tmp_path):
    from sga_core.stress.run import stress_model

    orig, _, _ = pair
    res = stress_model(str(orig), tmp_path / "out", str(demo_dir / "forget.jsonl"),
                       original=str(orig), attacks=["ablate"],
                       settings=StressSettings(seeds=[0], rouge=False))["ablate"]
    assert res["recovery"] is None and res["recovery_reason"].startswith("no direction")


def test_without_an_original_it_says_so(pair, demo_dir, tmp_path):
    from sga_core.stress.results import recovery_text
    from sga_core.stress.run import stress_model

    _, un, _ = pair
    res = stress_model(str(un), tmp_path / "out", str(demo_dir / "forget.jsonl"),
                       attacks=["ablate"], settings=StressSettings(rouge=False))["ablate"]
    assert res["recovery"] is None and res["recovery_reason"] == NO_ORIGINAL
    assert "give --original" in recovery_text(res)


def test_layers_out_of_range_are_refused(pair, demo_dir, tmp_path, capsys):
    from sga_core.cli import main
    from sga_core.stress.run import stress_model

    orig, un, _ = pair
    with pytest.raises(ConfigError, match="ablate_layers: 0 is outside 1..1000"):
        StressSettings(ablate_layers=[0]).check()
    res = stress_model(str(un), tmp_path / "out", str(demo_dir / "forget.jsonl"),
                       original=str(orig), attacks=["ablate"],
                       settings=StressSettings(rouge=False, ablate_layers=[9]))["ablate"]
    assert res["recovery_reason"] == "--ablate-layers 9: the model has 4 layers (1..4)"
    # the command: its flags, its result line
    assert main(["stress", str(un), "--forget", str(demo_dir / "forget.jsonl"), "--out",
                 str(tmp_path / "cli"), "--original", str(orig), "--attacks", "ablate",
                 "--no-rouge", "--seeds", "0", "--ablate-split", "half"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("ablate"))
    assert float(line.split()[2]) > 0.5, line


def test_a_runs_ablation_shows_on_its_token_and_layer_views(pair, demo_dir, tmp_path):
    """Stress-testing a run folder: the result file passes the readers' checks, and each
    attacked answer's token record (with its layers) is the Token probabilities page's
    variant row, named by its case."""
    from sga_core.report.layers import attacked_layer_record
    from sga_core.runs.folder import RunFolder
    from sga_core.stress.results import attacked_token_tables
    from sga_core.stress.run import stress_run
    from tests.helpers.stress import tiny_run

    orig, un, _ = pair
    run = tiny_run(tmp_path / "runs", un, demo_dir, "ga-run")
    res = stress_run(run, ["ablate"], StressSettings(seeds=[0, 1], rouge=False),
                     overrides={"original": str(orig)})["ablate"]
    good, bad = RunFolder(run).stress_results()
    assert "ablate" in good and not bad
    row = res["cases"][0]["eval_rows"][0]
    (key, rec), = attacked_token_tables(run, row).items()
    assert key == "ablate seed 0"
    lay = attacked_layer_record(rec)
    assert len(lay["probs"]) == 4 and lay["probs"][-1] == pytest.approx(rec["probs"], abs=1e-5)


def test_text_passages_are_read_as_their_prefix(pair, demo_dir, tmp_path):
    """On text data the prompt is a passage's prefix and the answer its continuation (as
    the text evaluation reads them): the direction is still the bias the copy adds."""
    from sga_core.stress.run import stress_model

    orig, un, _ = pair
    res = stress_model(str(un), tmp_path / "out", str(demo_dir / "text_forget.jsonl"),
                       original=str(orig), attacks=["ablate"],
                       settings=StressSettings(seeds=[0], rouge=False))["ablate"]
    assert res["kind"] == "text"
    (case,) = res["cases"]
    assert case["info"]["gap_norm"] == pytest.approx(ALPHA, rel=1e-3)
    assert case["eval_rows"] and len(res["samples"]) == len(case["eval_rows"])


def test_an_original_of_another_shape_is_named(pair, demo_dir, tmp_path, tiny_model_dir):
    from sga_core.stress.run import stress_model

    _, un, _ = pair  # 4 layers of width 64; the tiny model: 2 of 32
    res = stress_model(str(un), tmp_path / "out", str(demo_dir / "forget.jsonl"),
                       original=str(tiny_model_dir), attacks=["ablate"],
                       settings=StressSettings(seeds=[0], rouge=False))["ablate"]
    assert res["recovery"] is None
    assert res["recovery_reason"] == "the Original's layers or width are not this model's"
