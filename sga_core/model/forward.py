"""The model's forward passes, batched: mean answer NLLs for scoring (sorted by length so that
each padded batch wastes little), per-token probabilities with top-k alternatives (the
paper's Figure 3, training probes), and the training forward with per-sequence statistics."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from sga_core.model.encoding import Encoder, Sequence, collate


@dataclass
class SeqStats:
    """Per-sequence results of one forward pass over a padded batch."""

    mean_nll: Any  # tensor [n_seq]
    sum_nll: Any  # tensor [n_seq]
    n_tokens: Any  # tensor [n_seq]
    unit_ids: Any  # tensor [n_seq], position of the owning unit within the local batch
    roles: list[str]
    logits: Any = None  # tensor [n_seq, T, V], for methods that need the distribution
    labels: Any = None
    ref: SeqStats | None = None  # the frozen reference model's stats (same sequences)


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
    from sga_core.model.losses import sequence_nll

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


def forward_stats(model, seqs: list[Sequence], unit_ids: list[int], pad_id: int, device,
                  keep_logits: bool = False) -> SeqStats:
    import torch

    from sga_core.model.losses import sequence_nll

    batch = {k: v.to(device) for k, v in collate(seqs, pad_id).items()}
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                use_cache=False)
    mean_nll, sum_nll, n_tok = sequence_nll(out.logits, batch["labels"])
    return SeqStats(mean_nll=mean_nll, sum_nll=sum_nll, n_tokens=n_tok,
                    unit_ids=torch.tensor(unit_ids, device=device),
                    roles=[s.role for s in seqs],
                    logits=out.logits if keep_logits else None, labels=batch["labels"])
