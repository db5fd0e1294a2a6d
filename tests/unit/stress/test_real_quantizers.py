"""The real quantizers (sga_core.stress.bnb, the attacks nf4 and int8): the attacked copy's
linear layers are bitsandbytes' own 4-bit / 8-bit layers, their weights dequantize to a hand
computation of NF4 (blockwise absmax onto the 16 normal quantiles) and of LLM.int8 (row-wise
absmax onto int8), unlike round-to-nearest's on the same model; the forward uses those
weights; and the recovery written is the hand computation from the attacked model's
scores (docs/stress-tests.md#real-quantizers)."""

from __future__ import annotations

import copy

import pytest
import torch

from sga_core.stress import StressSettings
from sga_core.stress.bnb import LLM_INT8, NF4_LEVELS, dequantized, library_problem, quantize_bnb
from sga_core.stress.quantization import quantize_dequantize, quantized_modules

bnb = pytest.importorskip("bitsandbytes")


@pytest.fixture(scope="module")
def wide_tiny_dir(tmp_path_factory):
    """The tiny model 64 wide (the shared one is 32): bitsandbytes' CPU kernel takes NF4
    only where every layer's input width is a multiple of the block size (64)."""
    from sga_core.model.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("wide") / "model", hidden=64)


def _tiny(model_dir):
    from sga_core.evaluation.run import load_model_and_tokenizer

    return load_model_and_tokenizer(str(model_dir))


def hand_nf4(w: torch.Tensor, blocksize: int = 64) -> torch.Tensor:
    """NF4 by hand: the weight flattened, blocks of ``blocksize`` each scaled by its absmax,
    every weight the nearest NF4 level times that absmax."""
    flat = w.detach().float().reshape(-1)
    n = flat.numel()
    pad = (-n) % blocksize
    blocks = torch.cat([flat, flat.new_zeros(pad)]).reshape(-1, blocksize)
    absmax = blocks.abs().amax(dim=1, keepdim=True)
    levels = torch.tensor(NF4_LEVELS)
    idx = ((blocks / absmax).unsqueeze(-1) - levels).abs().argmin(dim=-1)
    return (levels[idx] * absmax).reshape(-1)[:n].reshape(w.shape)


def hand_int8(w: torch.Tensor) -> torch.Tensor:
    """LLM.int8's weight by hand: in float16, each row rounded to int8 by its absmax."""
    w16 = w.detach().half().float()
    absmax = w16.abs().amax(dim=1, keepdim=True)
    return torch.round(w16 * (127.0 / absmax)) * absmax / 127


def test_bitsandbytes_runs_here():
    assert library_problem() is None


def test_nf4_layers_are_the_librarys_and_dequantize_to_hand_nf4(wide_tiny_dir):
    model, _ = _tiny(wide_tiny_dir)
    q = copy.deepcopy(model).eval()
    names = quantize_bnb(q, "nf4")
    assert names == [n for n, _ in quantized_modules(model)] and names
    changed = total = 0
    for name in names:
        w = model.get_submodule(name).weight
        lin = q.get_submodule(name)
        assert isinstance(lin, bnb.nn.Linear4bit)
        assert isinstance(lin.weight, bnb.nn.Params4bit) and lin.weight.dtype == torch.uint8
        assert lin.weight.quant_state.quant_type == "nf4"
        assert lin.weight.quant_state.blocksize == 64
        deq = dequantized(lin)
        assert torch.equal(deq, hand_nf4(w)), name
        # not round-to-nearest: quant4's grid on the same weights is another one
        rtn = quantize_dequantize(w, 4)
        assert (deq != rtn).float().mean() > 0.5, name
        changed += int((deq != w).sum())
        total += w.numel()
        # the forward multiplies by exactly these weights (float32 compute)
        x = torch.randn(3, w.shape[1], generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            assert torch.allclose(lin(x), x @ deq.T, atol=1e-6), name
    assert changed / total > 0.9
    # the head (tied to the embedding) and the embedding stay in full precision
    assert type(q.get_output_embeddings()) is torch.nn.Linear
    assert torch.equal(q.get_output_embeddings().weight, model.get_output_embeddings().weight)
    assert torch.equal(q.get_input_embeddings().weight, model.get_input_embeddings().weight)


def test_int8_layers_are_the_librarys_and_dequantize_to_hand_int8(wide_tiny_dir):
    model, _ = _tiny(wide_tiny_dir)
    q = copy.deepcopy(model).eval()
    names = quantize_bnb(q, LLM_INT8)
    for name in names:
        w = model.get_submodule(name).weight
        lin = q.get_submodule(name)
        assert isinstance(lin, bnb.nn.Linear8bitLt) and lin.state.threshold == 6.0
        assert isinstance(lin.weight, bnb.nn.Int8Params) and lin.weight.dtype == torch.int8
        deq = dequantized(lin)
        assert torch.allclose(deq, hand_int8(w), atol=1e-7, rtol=0), name
        assert not torch.equal(deq, quantize_dequantize(w, 8)), name
        x = torch.randn(3, w.shape[1], generator=torch.Generator().manual_seed(0))
        with torch.no_grad():  # the inputs are int8 too: close to, not equal to, x @ deq.T
            out, ref = lin(x).float(), x @ deq.T
        assert (out - ref).abs().max() <= 0.05 * ref.abs().max(), name


def test_bad_modes_and_block_sizes_are_refused(wide_tiny_dir):
    model, _ = _tiny(wide_tiny_dir)
    with pytest.raises(ValueError, match="quant_type must be"):
        quantize_bnb(model, "nf3")
    with pytest.raises(ValueError, match="blocksize must be one of"):
        quantize_bnb(model, "nf4", blocksize=48)
    # 64 inputs in blocks of 128: the CPU kernel would dequantize it wrongly; nothing swapped
    with pytest.raises(ValueError, match="q_proj has 64 inputs, blocks of 128"):
        quantize_bnb(model, "nf4", blocksize=128)
    assert all(type(m) is torch.nn.Linear for _, m in quantized_modules(model))


def test_a_model_the_cpu_kernel_cannot_take_is_refused_in_words(tmp_path, tiny_model_dir,
                                                                demo_dir):
    from sga_core.data import load_qa
    from sga_core.stress.run import stress_model

    res = stress_model(str(tiny_model_dir), tmp_path / "out",
                       load_qa(demo_dir / "forget.jsonl")[:2], attacks=["nf4", "int8"],
                       settings=StressSettings(rouge=False))
    assert res["nf4"]["recovery"] is None
    assert res["nf4"]["recovery_reason"] == (
        "NF4 (bitsandbytes): bitsandbytes' CPU kernel dequantizes NF4 wrongly where a "
        "layer's input width is not a multiple of the block size: "
        "model.layers.0.self_attn.q_proj has 32 inputs, blocks of 64 (run it on a GPU, or "
        "with a block size that divides every width)")
    assert res["int8"]["cases"][0]["info"]["layers_quantized"] == 14  # int8 takes it


def _original_and_unlearned(tmp_path, model_dir, rows):
    """An Original that learned ``rows`` (Adam on their answers) and an unlearned model: the
    Original after a few gradient-ascent steps on the same rows, so that there is a gap."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    seqs = []
    for r in rows:
        p = tok(r["question"] + " ", add_special_tokens=False)["input_ids"]
        a = tok(r["answer"], add_special_tokens=False)["input_ids"]
        seqs.append((torch.tensor([p + a]), torch.tensor([[-100] * len(p) + a])))
    torch.manual_seed(0)

    def steps(n, lr, sign):
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        for _ in range(n):
            for ids, labels in seqs:
                (sign * model(input_ids=ids, labels=labels).loss).backward()
                opt.step()
                opt.zero_grad()

    steps(40, 3e-3, 1.0)
    model.save_pretrained(tmp_path / "original")
    tok.save_pretrained(tmp_path / "original")
    steps(3, 1e-3, -1.0)
    model.save_pretrained(tmp_path / "unlearned")
    tok.save_pretrained(tmp_path / "unlearned")
    return str(tmp_path / "original"), str(tmp_path / "unlearned")


@pytest.mark.slow
def test_nf4_recovery_is_the_hand_computation_of_the_attacked_scores(tmp_path, wide_tiny_dir,
                                                                     demo_dir):
    from sga_core.data import load_qa
    from sga_core.evaluation.run import load_model_and_tokenizer
    from sga_core.evaluation.settings import EvalSettings
    from sga_core.stress.run import stress_model
    from sga_core.stress.scoring import score_rows

    rows = load_qa(demo_dir / "forget.jsonl")[:3]
    original, unlearned = _original_and_unlearned(tmp_path, wide_tiny_dir, rows)
    res = stress_model(unlearned, tmp_path / "out", rows, load_qa(demo_dir / "retain.jsonl")[:3],
                       original=original, attacks=["nf4", "quant4"],
                       settings=StressSettings(rouge=False))
    nf4 = res["nf4"]

    _, es, _ = EvalSettings().resolve()

    def probs(model, tok):
        scores = score_rows(model, es.encoder(tok, model), [r["question"] for r in rows],
                            [r["answer"] for r in rows], max_new_tokens=0)
        return [s["prob"] for s in scores]

    m_o, tok = load_model_and_tokenizer(original)
    m_u, _ = load_model_and_tokenizer(unlearned)
    p_o, p_u = probs(m_o, tok), probs(m_u, tok)
    attacked = copy.deepcopy(m_u)
    quantize_bnb(attacked, "nf4")
    p_a = probs(attacked, tok)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    gap = mean(p_o) - mean(p_u)
    assert gap > 0.05  # the unlearning removed something to bring back
    expected = (mean(p_a) - mean(p_u)) / gap
    assert nf4["recovery"] == pytest.approx(expected, abs=1e-6)
    assert [s["prob"] for s in nf4["samples"]] == pytest.approx(p_a, abs=1e-7)
    case = nf4["cases"][0]
    assert case["info"]["quantizer"] == "bitsandbytes NF4"
    assert case["info"]["layers_quantized"] == len(quantized_modules(m_u))
    weights = [m.weight for _, m in quantized_modules(m_u)]
    share = sum(int((hand_nf4(w) != w).sum()) for w in weights) / sum(w.numel() for w in weights)
    assert case["info"]["weights_changed"] == pytest.approx(share, abs=1e-6)
    assert share > 0.9
    # another attacked model than quant4's, whose scores it does not share
    assert [s["prob"] for s in nf4["samples"]] != [s["prob"] for s in res["quant4"]["samples"]]
    # its token and layer records, as quant4's, for Token probabilities
    assert all(s["tokens"]["layers"] for s in nf4["samples"])
    assert nf4["settings"]["nf4_blocksize"] == 64


def test_without_bitsandbytes_the_attack_says_what_is_missing(monkeypatch, tmp_path,
                                                              tiny_model_dir, demo_dir):
    import builtins

    from sga_core.data import load_qa
    from sga_core.stress.run import stress_model

    real = builtins.__import__

    def no_bnb(name, *a, **kw):
        if name == "bitsandbytes" or name.startswith("bitsandbytes."):
            raise ImportError("No module named 'bitsandbytes'")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_bnb)
    res = stress_model(str(tiny_model_dir), tmp_path / "out",
                       load_qa(demo_dir / "forget.jsonl")[:2], attacks=["nf4", "int8"],
                       settings=StressSettings(rouge=False))
    for key in ("nf4", "int8"):
        assert res[key]["recovery"] is None
        reason = res[key]["recovery_reason"]
        assert "needs bitsandbytes" in reason and "cannot be imported" in reason
        assert "pip install bitsandbytes==0.50.2" in reason


def test_the_real_quantizers_are_offered_where_every_attack_is():
    from pathlib import Path

    from sga_core import workbench as wb
    from sga_core.cli import build_parser
    from sga_core.cli.stress import settings_from_args

    names = wb.attack_names()  # the Runs and Results pages' stress forms list these
    assert names.index("nf4") == names.index("quant8") + 1 and "int8" in names
    assert "nf4" not in wb.default_attacks()  # run when asked for
    args = build_parser().parse_args(["stress", "m", "--attacks", "nf4,int8",
                                      "--nf4-blocksize", "128", "--int8-threshold", "0"])
    st = settings_from_args(args)
    assert args.attacks == "nf4,int8" and (st.nf4_blocksize, st.int8_threshold) == (128, 0.0)
    ref = (Path(__file__).parents[3] / "docs/reference/attacks.md").read_text()
    assert "## `nf4`" in ref and "## `int8`" in ref


def test_a_block_size_bitsandbytes_does_not_take_is_refused_before_any_model_loads():
    from sga_core.params import ConfigError

    with pytest.raises(ConfigError, match="nf4_blocksize: 100 is not one of 64, 128, 256"):
        StressSettings(nf4_blocksize=100).check()
    StressSettings(nf4_blocksize=4096).check()
