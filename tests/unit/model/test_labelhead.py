"""The head at label positions only (sga_core.model.labelhead) gives the numbers of the full
[batch, sequence, vocabulary] logits it replaces: per-sequence NLLs and their gradients,
per-token log-probabilities and probabilities, the KL method's loss; in both of its modes."""

from __future__ import annotations

import copy

import pytest
import torch

from sga_core.model.encoding import IGNORE, Encoder, collate
from sga_core.model.forward import (
    batched_nll,
    forward_stats,
    sequence_logprobs,
    token_records,
)
from sga_core.model.loading import load_model, load_tokenizer
from sga_core.model.losses import sequence_nll, token_logprobs


@pytest.fixture(scope="module")
def setup(tiny_model_dir, demo_dir):
    from sga_core.data import load_qa

    tok = load_tokenizer(str(tiny_model_dir))
    enc = Encoder(tok, max_length=64)
    rows = load_qa(demo_dir / "forget.jsonl")[:5]
    seqs = [enc.qa(r["question"], r["answer"]) for r in rows]
    seqs += [enc.qa(r["question"], "I do not know.") for r in rows[:3]]
    model = load_model(str(tiny_model_dir))
    return model, enc, seqs


def full_forward(model, seqs, pad_id):
    b = collate(seqs, pad_id)
    return b, model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                    use_cache=False).logits


@pytest.mark.parametrize("mode", ["gather", "stash"])
def test_training_nll_and_gradients_match_full_logits(setup, mode):
    from sga_core.model.labelhead import row_nll, token_nll

    model, enc, seqs = setup
    b, logits = full_forward(model, seqs, enc.pad_id)
    mean_ref, sum_ref, n_ref = sequence_nll(logits, b["labels"])
    (mean_ref * torch.linspace(-1, 1, len(seqs))).sum().backward()
    grads_ref = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    if mode == "gather":
        stats = forward_stats(model, seqs, list(range(len(seqs))), enc.pad_id, "cpu")
        mean, total, n = stats.mean_nll, stats.sum_nll, stats.n_tokens
    else:  # the fused-loss path: hidden states kept, the head applied afterwards
        from sga_core.model.forward import forward_batch

        _, out = forward_batch(model, seqs, enc.pad_id, stash=True)
        assert out.logits is None and out.hidden is not None
        mean, total, n = row_nll(out, token_nll(out, grad=True))
    assert torch.equal(n, n_ref)
    assert torch.allclose(mean, mean_ref, rtol=1e-6, atol=1e-6)
    assert torch.allclose(total, sum_ref, rtol=1e-6, atol=1e-5)
    (mean * torch.linspace(-1, 1, len(seqs))).sum().backward()
    for p, g in zip(model.parameters(), grads_ref):
        assert torch.allclose(p.grad, g, rtol=1e-5, atol=1e-7)
    model.zero_grad()


def test_scoring_logprobs_and_records_match_full_logits(setup):
    model, enc, seqs = setup
    with torch.no_grad():
        b, logits = full_forward(model, seqs, enc.pad_id)
        mean_ref = sequence_nll(logits, b["labels"])[0]
        lp_ref = token_logprobs(logits, b["labels"])
        probs = torch.softmax(logits.float()[:, :-1], dim=-1)
    nll = batched_nll(model, seqs, enc.pad_id, batch_size=3)
    assert nll == pytest.approx(mean_ref.tolist(), rel=1e-6)
    lps = sequence_logprobs(model, seqs, enc.pad_id, batch_size=2)
    recs = token_records(model, enc, seqs, top_k=3, batch_size=4)
    for j in range(len(seqs)):
        mask = b["labels"][j, 1:] != IGNORE
        assert lps[j] == pytest.approx(lp_ref[j][mask].tolist(), rel=1e-6, abs=1e-7)
        ids = b["labels"][j, 1:][mask]
        p = probs[j, mask].gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        assert recs[j]["token_ids"] == ids.tolist()
        assert recs[j]["probs"] == pytest.approx([round(x, 6) for x in p.tolist()], abs=2e-6)
        top = probs[j, mask].topk(3, dim=-1)
        assert [[t for t, _ in alts] for alts in recs[j]["top"]] == \
            [[enc.tok.decode([i]) for i in row] for row in top.indices.tolist()]


def test_kl_loss_matches_full_logits_formula(setup):
    from sga_core.methods.kl import KL, KLConfig

    model, enc, seqs = setup
    ref = copy.deepcopy(model)
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.05 * torch.randn_like(p))
    roles = ["forget", "retain"] * (len(seqs) // 2)
    for s, r in zip(seqs, roles):
        s.role = r
    ids = [i // 2 for i in range(len(seqs))]
    n_units = max(ids) + 1
    method = KL(KLConfig(retain_weight=0.7))
    stats = forward_stats(model, seqs, ids, enc.pad_id, "cpu", keep_logits=True)
    with torch.no_grad():
        stats.ref = forward_stats(ref, seqs, ids, enc.pad_id, "cpu", keep_logits=True)
    got = method.unit_losses(stats, n_units)
    # the formula over full logits (the method before the head ran at label positions only)
    full = forward_stats(model, seqs, ids, enc.pad_id, "cpu", keep_logits="full")
    with torch.no_grad():
        full_ref = forward_stats(ref, seqs, ids, enc.pad_id, "cpu", keep_logits="full")
    logp = torch.log_softmax(full.logits[:, :-1].float(), dim=-1)
    ref_logp = torch.log_softmax(full_ref.logits[:, :-1].float(), dim=-1)
    mask = (full.labels[:, 1:] != -100).to(logp.dtype)
    kl_seq = ((ref_logp.exp() * (ref_logp - logp)).sum(-1) * mask).sum(1) / mask.sum(1)
    forget = torch.tensor([r == "forget" for r in roles])
    values = torch.where(forget, -full.mean_nll, 0.7 * kl_seq)
    expected = torch.zeros(n_units).index_add(0, torch.tensor(ids), values)
    assert kl_seq.abs().max() > 1e-4  # the reference really differs
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-6)
    for s in seqs:
        s.role = "train"


def test_fused_chunked_loss_matches_and_choice_is_explained(setup):
    from functools import partial

    from sga_core.model import fusedloss

    model, enc, seqs = setup
    ids = list(range(len(seqs)))
    plain = forward_stats(model, seqs, ids, enc.pad_id, "cpu")
    (plain.mean_nll * torch.arange(len(seqs))).sum().backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    chunked = partial(fusedloss.chunked_token_nll, chunk_rows=7)  # several chunks
    fused = forward_stats(model, seqs, ids, enc.pad_id, "cpu", loss_fn=chunked)
    assert torch.allclose(fused.mean_nll, plain.mean_nll, rtol=1e-6, atol=1e-6)
    (fused.mean_nll * torch.arange(len(seqs))).sum().backward()
    for p, g in zip(model.parameters(), want):  # the chunks add up in another order
        assert torch.allclose(p.grad, g, rtol=1e-4, atol=1e-6), (p.grad - g).abs().max()
    model.zero_grad()
    # under bf16 mixed precision the fused head computes in bf16, as the model would
    bf16 = fusedloss.loss_function("chunked", "bf16")
    low = forward_stats(model, seqs, ids, enc.pad_id, "cpu", loss_fn=bf16)
    assert low.mean_nll.dtype == torch.float32
    assert torch.allclose(low.mean_nll, plain.mean_nll, rtol=2e-2)
    assert fusedloss.loss_function("off", "bf16") is None
    # auto: liger only on a GPU with liger-kernel and an unsharded model; elsewhere bounded
    # (chunked above LOSS_BOUND logits: docs/large-models.md), off for a sharded model
    assert fusedloss.choose("auto", on_gpu=False, stashable=True) == "bounded"
    assert fusedloss.choose("auto", on_gpu=True, stashable=False) == "off"
    assert fusedloss.choose("chunked", on_gpu=False, stashable=True) == "chunked"
    with pytest.raises(ValueError, match="needs a GPU"):
        fusedloss.choose("liger", on_gpu=False, stashable=True)
    with pytest.raises(ValueError, match="sharded"):
        fusedloss.choose("chunked", on_gpu=True, stashable=False)
    if not fusedloss.liger_available():
        with pytest.raises(ValueError, match="requirements-gpu.txt"):
            fusedloss.choose("liger", on_gpu=True, stashable=True)


def test_stash_mode_only_for_plain_known_models(setup):
    from sga_core.model.labelhead import can_stash

    model, _, _ = setup
    assert can_stash(model)
    wrapped = torch.nn.Module()
    wrapped.module = model  # a DDP-like wrapper: looked through
    wrapped.forward = model.forward
    assert can_stash(wrapped)
    odd = copy.deepcopy(model)
    odd.config.model_type = "some-new-family"
    assert not can_stash(odd)  # unknown post-processing after the head: gather mode
