"""Scoring memory is bounded by the batch setting, not by the number of candidates
(docs/decisions/003-label-position-head.md): a tiny model with a LARGE vocabulary
(128k, like Llama 3) scores one question with 9 or with 41 candidate answers; the peak of the
tensors made while scoring (a deterministic count,
tests/helpers/memory.py) is the same for both at a given
batch size, grows with the batch size, and stays far below one [candidates, sequence, vocabulary]
float32 tensor."""

from __future__ import annotations

import pytest
import torch

from tests.helpers.memory import PeakTensorMemory

VOCAB = 131072


@pytest.fixture(scope="module")
def big_vocab(tiny_model_dir):
    from transformers import LlamaConfig, LlamaForCausalLM

    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_tokenizer

    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32,
                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=512, tie_word_embeddings=True)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).eval(), enc


def rows_with(n: int) -> list[dict]:
    return [{"question": "Who wrote the book about the harbour?",
             "answer": "Lucien Marchetti wrote it in Genoa.",
             "perturbed_answer": ["Somebody else wrote it in Paris."] * n}]


def peak_of(model, enc, n: int, batch_size: int) -> tuple[int, list]:
    from sga_core.evaluation.inputs import score_qa_candidates

    with PeakTensorMemory() as pm:
        out = score_qa_candidates(model, enc, rows_with(n), batch_size=batch_size)
    return pm.peak, out


def test_scoring_peak_is_bounded_by_batch_size_not_candidates(big_vocab):
    model, enc = big_vocab
    # 9 candidates: more than the first batch, which is scored in two halves (an early
    # progress report), so a whole batch of 4 is scored as with 41
    few, out_few = peak_of(model, enc, 8, 4)
    many, out_many = peak_of(model, enc, 40, 4)
    bigger_batch, _ = peak_of(model, enc, 40, 16)
    unbounded, _ = peak_of(model, enc, 40, 10_000)  # the whole group in one forward
    seq_len = max(len(enc.qa(r["question"], c)) for r in rows_with(1)
                  for c in [r["answer"], *r["perturbed_answer"]])
    full_logits = 41 * seq_len * VOCAB * 4  # what one batch of every candidate would hold
    print(f"peak bytes: 9 cands/batch 4 {few}, 41 cands/batch 4 {many}, batch 16 "
          f"{bigger_batch}, one batch {unbounded}; full float32 logits {full_logits}")
    # the number of candidates does not matter (the batch holding the longer true answer
    # has a few more scored tokens: 80 instead of 72)
    assert many <= few * 1.15
    assert bigger_batch > 2.5 * many  # the batch size does
    assert unbounded > 5 * many
    # at batch 4 the peak is a small fraction of the candidates' full logits
    assert many < full_logits / 5
    # and the values themselves do not depend on the batching
    assert out_many[0]["answer"] == pytest.approx(out_few[0]["answer"], rel=1e-5)
    assert out_many[0]["perturbed"][:8] == pytest.approx(out_few[0]["perturbed"], rel=1e-5)
