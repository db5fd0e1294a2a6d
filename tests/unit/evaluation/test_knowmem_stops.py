"""KnowMem's generation stops a batch once every answer holds a stop string (MUSE cuts its
answers there anyway): the same answers, fewer forward passes (docs/text-unlearning.md)."""

from __future__ import annotations

from sga_core.evaluation.inputs import cut_at
from sga_core.model.forward import greedy_generate
from sga_core.model.loading import load_model, load_tokenizer


def test_stop_strings_end_generation_early_with_the_same_cut_answers(tiny_model_dir):
    tok = load_tokenizer(str(tiny_model_dir))
    model = load_model(str(tiny_model_dir))
    vocab = model.get_output_embeddings().weight.shape[0]
    prompts = [tok(f"Question: who wrote book {i}?\nAnswer:")["input_ids"] for i in range(6)]
    never = vocab - 1  # an end token a random model does not say: it talks to the limit

    def decode(ids):
        return tok.decode(ids, skip_special_tokens=True)

    calls = []
    handle = model.register_forward_hook(lambda m, a, out: calls.append(1))
    try:
        full = [decode(t) for t in greedy_generate(model, prompts, tok.pad_token_id, never,
                                                   24, batch_size=3)]
        n_full = len(calls)
        longest = max(full, key=len)
        assert len(longest) > 6, full
        stops = (longest[len(longest) // 3:len(longest) // 3 + 2],)  # said part-way
        calls.clear()
        early = [decode(t) for t in greedy_generate(model, prompts, tok.pad_token_id, never,
                                                    24, batch_size=3, stop_strings=stops,
                                                    decode=decode)]
        n_early = len(calls)
    finally:
        handle.remove()
    assert [cut_at(a, stops) for a in early] == [cut_at(a, stops) for a in full]
    assert any(a != cut_at(a, stops) for a in full)  # the stop does occur
    assert n_early < n_full
