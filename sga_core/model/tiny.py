"""A tiny random causal LM with a real tokenizer trained on the demo corpus, built in seconds
and fully offline. Used by the tests, the benchmarks and quick dry runs; never for results."""

from __future__ import annotations

import json
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>", "<|system|>", "<|user|>", "<|assistant|>"]


DEMO_SPLITS = ("forget", "retain", "real_authors", "world_facts", "text_forget", "text_retain",
               "text_holdout", "text_forget_qa", "text_retain_qa")


def corpus_texts() -> list[str]:
    """Every string of the shipped demo corpus, then the "I don't know" templates."""
    from sga_core.assets import DEMO_DIR, idk_templates
    from sga_core.fileio import read_jsonl

    texts = []
    for split in DEMO_SPLITS:
        for r in read_jsonl(DEMO_DIR / f"{split}.jsonl"):
            texts += [v for v in r.values() if isinstance(v, str)]
            texts += [v for v in r.get("perturbed_answer", []) if isinstance(v, str)]
    return texts + idk_templates()


def build_tiny_model(out_dir: str | Path, vocab_size: int = 600, hidden: int = 32,
                     layers: int = 2, heads: int = 4, seed: int = 0,
                     chat_template: bool = True) -> Path:
    """Write a tiny Llama model + BPE tokenizer to ``out_dir``; returns the folder."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tk = Tokenizer(models.BPE(unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator(corpus_texts(), trainer=trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", bos_token="<s>",
                                  eos_token="</s>", unk_token="<unk>",
                                  additional_special_tokens=SPECIALS[4:])
    if chat_template:
        tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(out)
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=hidden * 2,
                      num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=heads, max_position_embeddings=512,
                      pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id, tie_word_embeddings=True)
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(out, safe_serialization=True)
    (out / "TINY_MODEL.json").write_text(json.dumps({"note": "random tiny test model"}))
    return out
