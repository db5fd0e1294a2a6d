"""Round-to-nearest quantization (sga_core.stress.quantization): the round trips equal a
hand computation, the group steps are right, and rounding the tiny Original moves its
forget NLLs no more than the rounding step predicts."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from sga_core.stress.quantization import (
    group_steps,
    max_error,
    quantize_dequantize,
    quantize_model,
    quantized_modules,
)


def test_symmetric_4_and_8_bit_round_trips_equal_a_hand_computation():
    w = torch.tensor([[0.0, 0.1, -0.33, 0.7]])
    # groups of 2: [0, 0.1] has step 0.1/7, [-0.33, 0.7] has step 0.7/7 = 0.1
    q4 = quantize_dequantize(w, 4, group_size=2)
    # -0.33/0.1 = -3.3 -> -3 -> -0.3; 0.7/0.1 = 7 -> 0.7; 0.1/(0.1/7) = 7 -> 0.1
    assert torch.allclose(q4, torch.tensor([[0.0, 0.1, -0.3, 0.7]]), atol=1e-6)
    q8 = quantize_dequantize(w, 8, group_size=2)
    step = 0.7 / 127
    assert q8[0, 2].item() == pytest.approx(round(-0.33 / step) * step, abs=1e-6)
    assert q8[0, 2].item() == pytest.approx(-60 * step, abs=1e-6)
    assert q8[0, 3].item() == pytest.approx(0.7, abs=1e-6)


def test_asymmetric_round_trip_uses_a_zero_point():
    w = torch.tensor([[-0.3, 0.0, 0.46, 1.2]])
    # one group: step (1.2 + 0.3) / 15 = 0.1, zero point round(0.3 / 0.1) = 3;
    # q = round(w / 0.1) + 3 = [0, 3, 8, 15] -> (q - 3) * 0.1
    q = quantize_dequantize(w, 4, group_size=4, symmetric=False)
    assert torch.allclose(q, torch.tensor([[-0.3, 0.0, 0.5, 1.2]]), atol=1e-6)


def test_group_steps_are_each_groups_absmax_over_the_grid():
    w = torch.tensor([[1.0, -2.0, 0.5, 0.25, -7.0],
                      [0.0, 0.0, 3.5, -1.0, 0.7]])
    steps = group_steps(w, 4, group_size=2)  # groups: cols 0-1, 2-3, and the short tail 4
    expected = torch.tensor([[2.0, 0.5, 7.0], [1.0, 3.5, 0.7]]) / 7
    expected[1, 0] = 1.0  # a group of zeros gets step 1 (it stays zero)
    assert torch.allclose(steps, expected)
    q = quantize_dequantize(w, 4, group_size=2)
    assert torch.equal(q[1, :2], torch.zeros(2))
    assert q[0, 4].item() == pytest.approx(-7.0)  # the largest weight stays on the grid


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
def test_no_weight_moves_more_than_half_its_step(bits, symmetric):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(16, 300, generator=g)  # 300 = 2 groups of 128 + a tail of 44
    q = quantize_dequantize(w, bits, 128, symmetric)
    bound = max_error(w, bits, 128, symmetric)
    assert bound.shape == w.shape
    assert ((q - w).abs() <= bound + 1e-6).all()
    levels = q[0, :128].unique().numel()
    assert levels <= 2 ** bits


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="bits"):
        quantize_dequantize(torch.zeros(2, 2), 1)
    with pytest.raises(ValueError, match="2-D"):
        quantize_dequantize(torch.zeros(4), 4)


def _forget_nlls(model, tok, rows):
    from sga_core.evaluation.settings import EvalSettings
    from sga_core.stress.scoring import score_rows

    _, es, _ = EvalSettings().resolve()
    scores = score_rows(model, es.encoder(tok, model), [r["question"] for r in rows],
                        [r["answer"] for r in rows], max_new_tokens=0)
    return [-math.log(s["prob"]) for s in scores]


def test_quantizing_the_tiny_original_moves_its_metrics_as_the_rounding_predicts(
        tiny_model_dir, demo_dir):
    """Linear weights only (embeddings, norms and the head untouched), each within half a
    step; the forget NLLs move, and 8 bits move them about 127/7 times less than 4 bits
    (the step's ratio): first order in the step, allowed twice that."""
    from sga_core.data import load_qa
    from sga_core.evaluation.run import load_model_and_tokenizer

    rows = load_qa(demo_dir / "forget.jsonl")
    model, tok = load_model_and_tokenizer(str(tiny_model_dir))
    base = _forget_nlls(model, tok, rows)
    changes = {}
    for bits in (8, 4):
        q = copy.deepcopy(model)
        n = quantize_model(q, bits)
        assert n == len(quantized_modules(model)) > 0
        for (name, m), (_, mq) in zip(quantized_modules(model), quantized_modules(q)):
            assert ((mq.weight - m.weight).abs() <= max_error(m.weight, bits) + 1e-7).all(), name
        head, head_q = model.get_output_embeddings(), q.get_output_embeddings()
        assert torch.equal(head.weight, head_q.weight)
        assert torch.equal(model.get_input_embeddings().weight, q.get_input_embeddings().weight)
        after = _forget_nlls(q, tok, rows)
        changes[bits] = sum(abs(a - b) for a, b in zip(after, base)) / len(base)
    assert changes[4] > 0
    assert changes[8] <= 2 * (7 / 127) * changes[4]
    assert changes[8] < 1e-3
