"""The SGA objective (docs/spec.md#1-the-sga-objective): coefficients, the per-sequence NLL,
and r = 0 == GA."""

from __future__ import annotations

import math

import pytest
import torch

from sga_core.methods import MethodData, get_method
from sga_core.methods.base import flatten
from sga_core.model.encoding import Encoder, collate
from sga_core.model.forward import forward_stats
from sga_core.model.losses import describe_coefficients, sequence_nll, sga_coefficients


@pytest.mark.parametrize(
    ("r", "k", "convention", "expected"),
    [
        (-0.8, 4, "label", (-1.6, 0.2)),
        (-0.8, 4, "objective", (-1.6, -0.2)),
        (0.2, 4, "label", (-0.85, -0.05)),
        (0.2, 4, "objective", (-0.85, 0.05)),
        (0.0, 4, "label", (-1.0, 0.0)),
        (1.0, 4, "label", (-0.25, -0.25)),
        (-10.0, 2, "label", (-6.0, 5.0)),
    ],
)
def test_coefficient_table(r, k, convention, expected):
    c_f, c_n = sga_coefficients(r, k, convention)
    assert c_f == pytest.approx(expected[0], abs=1e-12)
    assert c_n == pytest.approx(expected[1], abs=1e-12)


def test_coefficients_reject_bad_input():
    with pytest.raises(ValueError, match="r"):
        sga_coefficients(1.5, 4)
    with pytest.raises(ValueError, match="K"):
        sga_coefficients(0.1, 0)
    with pytest.raises(ValueError, match="convention"):
        sga_coefficients(0.1, 4, "nonsense")
    with pytest.raises(ValueError):
        sga_coefficients(float("nan"), 4)


def test_describe_in_words():
    assert describe_coefficients(-0.8, 4) == (
        "forget: push down x1.60 - each normal answer: learn x0.20")
    assert describe_coefficients(0.2, 4) == (
        "forget: push down x0.85 - each normal answer: push down x0.05")
    assert describe_coefficients(0.0, 4).endswith("each normal answer: ignored (x0)")


def test_sequence_nll_matches_manual():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 7)
    labels = torch.tensor([[-100, -100, 3, 4, 1], [-100, 2, 2, -100, -100]])
    mean, total, n = sequence_nll(logits, labels)
    logp = torch.log_softmax(logits, -1)
    # row 0 scores positions 2,3,4 from logits at 1,2,3
    m0 = -(logp[0, 1, 3] + logp[0, 2, 4] + logp[0, 3, 1]) / 3
    m1 = -(logp[1, 0, 2] + logp[1, 1, 2]) / 2
    assert n.tolist() == [3, 2]
    assert mean[0].item() == pytest.approx(m0.item(), rel=1e-6)
    assert mean[1].item() == pytest.approx(m1.item(), rel=1e-6)
    assert total[0].item() == pytest.approx(3 * m0.item(), rel=1e-6)


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from sga_core.model.loading import load_model, load_tokenizer

    tok = load_tokenizer(str(tiny_model_dir))
    model = load_model(str(tiny_model_dir))
    return model, Encoder(tok)


def _method_data(demo_dir, idk_normals_file):
    from sga_core.data import NormalTable, load_qa

    return MethodData("qa", load_qa(demo_dir / "forget.jsonl")[:4],
                      normals=NormalTable.load(idk_normals_file))


def _loss_and_grads(model, method, units, pad_id):
    model.zero_grad(set_to_none=True)
    seqs, ids = flatten(units)
    stats = forward_stats(model, seqs, ids, pad_id, "cpu")
    loss = method.unit_losses(stats, len(units)).mean()
    loss.backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return loss.detach(), grads


def test_r0_equals_gradient_ascent(tiny, demo_dir, idk_normals_file):
    """SGA at r = 0 (K = 4, with normal answers in the batch) == GA on the same batch."""
    model, enc = tiny
    data = _method_data(demo_dir, idk_normals_file)
    sga = get_method("sga")(get_method("sga").Config(r=0.0, k=4))
    ga = get_method("ga")(get_method("ga").Config())
    loss_s, g_s = _loss_and_grads(model, sga, sga.build_units(data, enc), enc.pad_id)
    loss_g, g_g = _loss_and_grads(model, ga, ga.build_units(data, enc), enc.pad_id)
    assert abs(loss_s - loss_g) / abs(loss_g) < 1e-6
    assert (g_s - g_g).norm() / g_g.norm() < 1e-6
    assert g_g.norm() > 0


@pytest.mark.parametrize("convention", ["label", "objective"])
def test_one_batch_equals_weighted_separate_sequences(tiny, demo_dir, idk_normals_file,
                                                      convention):
    """The single padded forward/backward gives c_f*nll(forget) + sum c_n*nll(normal_k)."""
    model, enc = tiny
    data = _method_data(demo_dir, idk_normals_file)
    cls = get_method("sga")
    sga = cls(cls.Config(r=-0.8, k=4, convention=convention))
    units = sga.build_units(data, enc)
    loss, grads = _loss_and_grads(model, sga, units, enc.pad_id)
    c_f, c_n = sga_coefficients(-0.8, 4, convention)
    model.zero_grad(set_to_none=True)
    total = 0.0
    for u in units:
        for s in u.seqs:
            b = collate([s], enc.pad_id)
            nll = sequence_nll(model(input_ids=b["input_ids"]).logits, b["labels"])[0][0]
            total = total + (c_f if s.role == "forget" else c_n) * nll
    ref = total / len(units)
    ref.backward()
    ref_grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    assert loss.item() == pytest.approx(ref.item(), rel=1e-5)
    assert (grads - ref_grads).norm() / ref_grads.norm() < 1e-5
    assert len(units[0].seqs) == 4 and [s.role for s in units[0].seqs] == [
        "forget", "normal", "normal", "normal"]
    assert not math.isclose(c_n, 0.0)


def test_labels_cover_answer_and_eos_only(tiny):
    _, enc = tiny
    s = enc.qa("Who wrote it?", "Lucien Marchetti wrote it.")
    scored = [t for t in s.labels if t != -100]
    assert scored[-1] == enc.eos_id
    assert enc.tok.decode(scored[:-1]).strip() == "Lucien Marchetti wrote it."
    prompt_len = len(enc.prompt_ids("Who wrote it?"))
    assert all(t == -100 for t in s.labels[:prompt_len])
