"""Batched answer scoring: the mean answer NLL of many sequences, sorted by length so that
each padded batch wastes little."""

from __future__ import annotations

from sga_core.encoding import Encoder, Sequence, collate


def batched_nll(model, seqs: list[Sequence], pad_id: int, device="cpu",
                batch_size: int = 16) -> list[float]:
    """Mean answer NLL (SPEC 1's ``nll``) for each sequence, in the input order."""
    import torch

    from sga_core.losses import sequence_nll

    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    out = [0.0] * len(seqs)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for s in range(0, len(order), batch_size):
            idx = order[s:s + batch_size]
            b = {k: v.to(device) for k, v in collate([seqs[i] for i in idx], pad_id).items()}
            logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                           use_cache=False).logits
            mean, _, _ = sequence_nll(logits, b["labels"])
            for i, v in zip(idx, mean.tolist()):
                out[i] = v
    if was_training:
        model.train()
    return out


def rows_nll(model, enc: Encoder, rows: list[dict], kind: str = "qa", device="cpu",
             batch_size: int = 16) -> list[float]:
    """Mean answer NLL of each data row's own answer (or continuation)."""
    return batched_nll(model, [enc.row(r, kind) for r in rows], enc.pad_id, device, batch_size)
