"""A text batch scores every token, so its full-vocabulary logits can be gigabytes: the
default loss (``training.fused_loss: auto``) chunks the head and cross-entropy wherever the
scored tokens x vocabulary exceed a bound, on the CPU too, and keeps the plain loss's numbers
below it (docs/large-models.md)."""

from __future__ import annotations

import pytest
import torch

from sga_core.model import fusedloss
from sga_core.model.encoding import Encoder, Sequence
from sga_core.model.forward import forward_stats
from sga_core.model.loading import load_model, load_tokenizer


class Cpu:
    class device:  # noqa: N801 - what for_run reads of an Accelerator
        type = "cpu"

    mixed_precision = "no"


@pytest.fixture(scope="module")
def text_batch(tiny_model_dir):
    tok = load_tokenizer(str(tiny_model_dir))
    enc = Encoder(tok, max_length=256)
    model = load_model(str(tiny_model_dir))
    g = torch.Generator().manual_seed(0)
    vocab = model.get_output_embeddings().weight.shape[0]
    seqs = []
    for n in (96, 128, 80, 128):  # text: every token is scored
        ids = torch.randint(0, vocab, (n,), generator=g).tolist()
        seqs.append(Sequence(ids, list(ids)))
    return model, enc, seqs, vocab


def largest_saved(model, seqs, pad_id, loss_fn):
    """The forward's per-sequence NLLs and the largest tensor it keeps for the backward."""
    sizes = []

    def pack(t):
        sizes.append(t.numel())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        stats = forward_stats(model, seqs, list(range(len(seqs))), pad_id, "cpu",
                              loss_fn=loss_fn)
    return stats, max(sizes)


def test_auto_chunks_a_batch_above_the_bound_on_the_cpu(text_batch, monkeypatch):
    model, enc, seqs, vocab = text_batch
    n_scored = sum(len(s) - 1 for s in seqs)
    plain, plain_max = largest_saved(model, seqs, enc.pad_id, None)
    assert plain_max >= n_scored * vocab  # the plain loss keeps every scored token's logits
    # the bound is 64 Mi logits; this batch is 430 x 600, so the test lowers it
    monkeypatch.setattr(fusedloss, "LOSS_BOUND", n_scored * vocab // 4)
    auto = fusedloss.for_run("auto", Cpu, model)
    assert auto is not None, "auto must not be the plain loss on the CPU"
    stats, kept = largest_saved(model, seqs, enc.pad_id, auto)
    assert kept < n_scored * vocab // 2  # never all the logits at once
    assert torch.allclose(stats.mean_nll, plain.mean_nll, rtol=1e-5, atol=1e-6)
    # gradients agree with the plain loss
    stats.mean_nll.sum().backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    plain2 = forward_stats(model, seqs, list(range(len(seqs))), enc.pad_id, "cpu")
    plain2.mean_nll.sum().backward()
    for p, g in zip(model.parameters(), got):
        assert torch.allclose(p.grad, g, rtol=1e-4, atol=1e-6)
    model.zero_grad()


def test_auto_keeps_the_plain_loss_below_the_bound(text_batch):
    model, enc, seqs, vocab = text_batch
    assert sum(len(s) - 1 for s in seqs) * vocab < fusedloss.LOSS_BOUND
    plain, plain_max = largest_saved(model, seqs, enc.pad_id, None)
    auto, auto_max = largest_saved(model, seqs, enc.pad_id, fusedloss.for_run("auto", Cpu,
                                                                               model))
    assert auto_max == plain_max  # one cross-entropy over all logits: the same numbers
    assert torch.equal(auto.mean_nll, plain.mean_nll)


def test_the_bound_is_the_default_choice_wherever_the_head_can_be_applied():
    assert fusedloss.choose("auto", on_gpu=False, stashable=True) == "bounded"
    assert fusedloss.choose("auto", on_gpu=False, stashable=False) == "off"
    if not fusedloss.liger_available():
        assert fusedloss.choose("auto", on_gpu=True, stashable=True) == "bounded"


def test_text_scoring_holds_at_most_the_bound_of_logits_where_the_head_is_not_chunked(
        text_batch, monkeypatch):
    """A model whose head computes every scored token's logits inside its forward (a family
    not known to apply its head plainly) is scored in pieces within the bound."""
    import copy

    from sga_core.model.forward import sequence_logprobs
    from sga_core.model.labelhead import can_stash, output_head

    model, enc, seqs, vocab = text_batch
    want = sequence_logprobs(model, seqs, enc.pad_id, batch_size=16)
    other = copy.deepcopy(model)
    other.config.model_type = "unknown-family"
    assert not can_stash(other)
    bound = 150 * vocab  # the test's bound: 150 scored tokens; the batch scores 428
    monkeypatch.setattr(fusedloss, "LOSS_BOUND", bound)
    seen = []
    output_head(other).register_forward_hook(lambda m, a, out: seen.append(out.shape[0]))
    got = sequence_logprobs(other, seqs, enc.pad_id, batch_size=16)
    assert seen and max(seen) * vocab <= bound
    assert sum(seen) == sum(len(s) - 1 for s in seqs)
    for a, b in zip(got, want):
        assert a == pytest.approx(b, abs=1e-4)


def test_training_checkpoints_a_micro_batch_over_the_token_bound(tiny_model_dir):
    from sga_core.config import TrainingArgs
    from sga_core.methods.base import Unit
    from sga_core.model.lora import CHECKPOINT_TOKENS, for_training, micro_batch_tokens

    units = [Unit(index=i, seqs=[Sequence([1] * n, [1] * n) for _ in range(4)])
             for i, n in enumerate((1024, 512, 1024, 256, 1024))]
    # the 4 largest units, 4 sequences each, padded to their longest: 3 x 4,096 + 2,048
    assert micro_batch_tokens(units, 4) == 14336
    assert micro_batch_tokens(units, 4, grad_accum=4) == 4096
    plain = TrainingArgs()
    assert not plain.gradient_checkpointing
    big = for_training(load_model(str(tiny_model_dir)), plain, CHECKPOINT_TOKENS + 1)
    assert big.is_gradient_checkpointing
    small = for_training(load_model(str(tiny_model_dir)), plain, CHECKPOINT_TOKENS)
    assert not small.is_gradient_checkpointing
