"""Batched answer scoring: the mean answer NLL of many sequences, sorted by length so that
each padded batch wastes little."""

from __future__ import annotations

import contextlib

from sga_core.encoding import Encoder, Sequence, collate


def length_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (shortest first), so padding is small."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    step = max(1, batch_size)
    return [order[s:s + step] for s in range(0, len(order), step)]


@contextlib.contextmanager
def inference(model):
    """Eval mode and no gradients for the block; the model's training mode is restored."""
    import torch

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        if was_training:
            model.train()


def batched_nll(model, seqs: list[Sequence], pad_id: int, device="cpu",
                batch_size: int = 16) -> list[float]:
    """Mean answer NLL (SPEC 1's ``nll``) for each sequence, in the input order."""
    from sga_core.losses import sequence_nll

    out = [0.0] * len(seqs)
    with inference(model):
        for idx in length_batches([len(x) for x in seqs], batch_size):
            b = {k: v.to(device) for k, v in collate([seqs[i] for i in idx], pad_id).items()}
            logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                           use_cache=False).logits
            mean, _, _ = sequence_nll(logits, b["labels"])
            for i, v in zip(idx, mean.tolist()):
                out[i] = v
    return out


def rows_nll(model, enc: Encoder, rows: list[dict], kind: str = "qa", device="cpu",
             batch_size: int = 16) -> list[float]:
    """Mean answer NLL of each data row's own answer (or continuation)."""
    return batched_nll(model, [enc.row(r, kind) for r in rows], enc.pad_id, device, batch_size)
