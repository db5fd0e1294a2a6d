"""Per-token probabilities of answers (the paper's Figure 3): for each row, each answer
token's probability given the prompt and the tokens before it, with the top-k alternatives.

Evaluation stores these tables in ``eval/tokens.jsonl`` so the browser shows them without
loading a model; the trainer's probes use the same function during training.
"""

from __future__ import annotations

from sga_core.encoding import Encoder, Sequence, collate
from sga_core.scoring import inference, length_batches


def token_records(model, enc: Encoder, seqs: list[Sequence], device="cpu", top_k: int = 5,
                  batch_size: int = 16) -> list[dict]:
    """One record per sequence: tokens, token ids, probabilities, top-k alternatives."""
    import torch

    out: list[dict | None] = [None] * len(seqs)
    with inference(model):
        for idx in length_batches([len(x) for x in seqs], batch_size):
            b = {k: v.to(device) for k, v in collate([seqs[i] for i in idx], enc.pad_id).items()}
            logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                           use_cache=False).logits.float()
            probs = torch.softmax(logits[:, :-1], dim=-1)
            for j, i in enumerate(idx):
                labels = b["labels"][j, 1:]
                pos = (labels != -100).nonzero().flatten()
                ids = labels[pos]
                p = probs[j, pos].gather(-1, ids.unsqueeze(-1)).squeeze(-1)
                top_p, top_i = probs[j, pos].topk(top_k, dim=-1)
                out[i] = {
                    "tokens": [enc.tok.decode([t]) for t in ids.tolist()],
                    "token_ids": ids.tolist(),
                    "probs": [round(x, 6) for x in p.tolist()],
                    "top": [[[enc.tok.decode([t]), round(q, 5)] for t, q in zip(ti, tp)]
                            for ti, tp in zip(top_i.tolist(), top_p.tolist())],
                }
    return out  # type: ignore[return-value]


def row_token_table(model, enc: Encoder, rows: list[dict], kind: str = "qa", set_name="forget",
                    device="cpu") -> list[dict]:
    """Token records for each row's own answer, tagged with set and row index."""
    recs = token_records(model, enc, [enc.row(r, kind) for r in rows], device)
    return [{"set": set_name, "index": i, **rec} for i, rec in enumerate(recs)]
