"""The model's forward passes, in one place.

One length-batched loop (:func:`per_sequence`: sequences sorted by length so each padded
batch wastes little, one forward per batch, results back in input order) serves

- scoring: :func:`batched_nll` / :func:`rows_nll`, the mean answer NLL of each sequence;
- per-token log-probabilities: :func:`sequence_logprobs` (Min-K%, perplexity);
- per-token probabilities with top-k alternatives: :func:`token_records` /
  :func:`row_token_table` (the paper's Figure 3, training probes, the probe page);

:func:`greedy_generate` is the model side of greedy generation (left-padded batches, the same
length batching), and :func:`forward_stats` the training forward with per-sequence statistics.
Every forward goes through :func:`forward_batch`. torch is imported inside the functions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from sga_core.model.encoding import IGNORE, Encoder, Sequence, collate

# called after each batch with the indices (into the input list) the batch held
OnBatch = Callable[[list[int]], None] | None


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


def forward_batch(model, seqs: list[Sequence], pad_id: int, device="cpu"):
    """Collate ``seqs`` (right padding) and run the model once: ``(batch, logits)``."""
    batch = {k: v.to(device) for k, v in collate(seqs, pad_id).items()}
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                   use_cache=False).logits
    return batch, logits


def per_sequence(model, seqs: list[Sequence], pad_id: int, reduce: Callable, device="cpu",
                 batch_size: int = 16, batches: list[list[int]] | None = None,
                 on_batch: OnBatch = None) -> list:
    """THE batched inference loop: ``reduce(logits, labels)`` gives one value per sequence
    of a padded batch; the values come back in input order.

    ``batches`` (lists of indices into ``seqs``) fixes which sequences share a forward;
    by default :func:`length_batches` of ``batch_size``. Inside a batch the sequences are
    ordered by length (a stable sort).
    """
    out: list = [None] * len(seqs)
    if batches is None:
        batches = length_batches([len(s) for s in seqs], batch_size)
    with inference(model):
        for group in batches:
            idx = sorted(group, key=lambda i: len(seqs[i]))
            batch, logits = forward_batch(model, [seqs[i] for i in idx], pad_id, device)
            for i, v in zip(idx, reduce(logits, batch["labels"])):
                out[i] = v
            if on_batch is not None:
                on_batch(idx)
    return out


def _mean_nll(logits, labels) -> list[float]:
    from sga_core.model.losses import sequence_nll

    return sequence_nll(logits, labels)[0].tolist()


def batched_nll(model, seqs: list[Sequence], pad_id: int, device="cpu", batch_size: int = 16,
                batches: list[list[int]] | None = None,
                on_batch: OnBatch = None) -> list[float]:
    """Mean answer NLL (SPEC 1's ``nll``) for each sequence, in the input order."""
    return per_sequence(model, seqs, pad_id, _mean_nll, device, batch_size, batches, on_batch)


def rows_nll(model, enc: Encoder, rows: list[dict], kind: str = "qa", device="cpu",
             batch_size: int = 16) -> list[float]:
    """Mean answer NLL of each data row's own answer (or continuation)."""
    return batched_nll(model, [enc.row(r, kind) for r in rows], enc.pad_id, device, batch_size)


def _logprob_lists(logits, labels) -> list[list[float]]:
    from sga_core.model.losses import token_logprobs

    lp = token_logprobs(logits, labels).cpu()
    mask = (labels[:, 1:] != IGNORE).cpu()
    return [lp[j][mask[j]].tolist() for j in range(lp.shape[0])]


def sequence_logprobs(model, seqs: list[Sequence], pad_id: int, device="cpu",
                      batch_size: int = 16) -> list[list[float]]:
    """The log-probability of each scored token of each sequence, in input order."""
    return per_sequence(model, seqs, pad_id, _logprob_lists, device, batch_size)


def _records(enc: Encoder, top_k: int, logits, labels) -> list[dict]:
    import torch

    probs = torch.softmax(logits.float()[:, :-1], dim=-1)
    out = []
    for j in range(probs.shape[0]):
        lab = labels[j, 1:]
        pos = (lab != IGNORE).nonzero().flatten()
        ids = lab[pos]
        p = probs[j, pos].gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        top_p, top_i = probs[j, pos].topk(top_k, dim=-1)
        out.append({
            "tokens": [enc.tok.decode([t]) for t in ids.tolist()],
            "token_ids": ids.tolist(),
            "probs": [round(x, 6) for x in p.tolist()],
            "top": [[[enc.tok.decode([t]), round(q, 5)] for t, q in zip(ti, tp)]
                    for ti, tp in zip(top_i.tolist(), top_p.tolist())],
        })
    return out


def token_records(model, enc: Encoder, seqs: list[Sequence], device="cpu", top_k: int = 5,
                  batch_size: int = 16) -> list[dict]:
    """One record per sequence: tokens, token ids, probabilities, top-k alternatives."""
    return per_sequence(model, seqs, enc.pad_id, partial(_records, enc, top_k), device,
                        batch_size)


def row_token_table(model, enc: Encoder, rows: list[dict], kind: str = "qa", set_name="forget",
                    device="cpu") -> list[dict]:
    """Token records for each row's own answer, tagged with set and row index."""
    recs = token_records(model, enc, [enc.row(r, kind) for r in rows], device)
    return [{"set": set_name, "index": i, **rec} for i, rec in enumerate(recs)]


def _greedy_config(model, max_new_tokens: int, pad_id: int, eos_id: int):
    import copy

    cfg = copy.deepcopy(model.generation_config)
    cfg.do_sample = False
    for attr in ("temperature", "top_p", "top_k", "typical_p", "min_p"):
        if hasattr(cfg, attr):
            setattr(cfg, attr, None)
    cfg.num_beams = 1
    cfg.max_new_tokens = int(max_new_tokens)
    cfg.max_length = None
    cfg.pad_token_id = pad_id
    cfg.eos_token_id = eos_id
    return cfg


def greedy_generate(model, prompts: list[list[int]], pad_id: int, eos_id: int,
                    max_new_tokens: int, device="cpu", batch_size: int = 8,
                    on_batch: OnBatch = None) -> list[list[int]]:
    """Greedy continuations of token-id prompts, batched by length with LEFT padding.

    Returns, in input order, each prompt's new token ids up to (not including) the first EOS.
    """
    import torch

    cfg = _greedy_config(model, max_new_tokens, pad_id, eos_id)
    out: list[list[int]] = [[] for _ in prompts]
    with inference(model):
        for idx in length_batches([len(p) for p in prompts], batch_size):
            width = max(len(prompts[i]) for i in idx)
            input_ids = torch.full((len(idx), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for j, i in enumerate(idx):
                n = len(prompts[i])
                input_ids[j, width - n:] = torch.tensor(prompts[i])
                mask[j, width - n:] = 1
            gen = model.generate(input_ids=input_ids.to(device), attention_mask=mask.to(device),
                                 generation_config=cfg)
            for j, i in enumerate(idx):
                new = gen[j, width:].tolist()
                out[i] = new[:new.index(eos_id)] if eos_id in new else new
            if on_batch is not None:
                on_batch(idx)
    return out


def forward_stats(model, seqs: list[Sequence], unit_ids: list[int], pad_id: int, device,
                  keep_logits: bool = False) -> SeqStats:
    """The training forward (with gradients) of one padded batch, per-sequence NLLs."""
    import torch

    from sga_core.model.losses import sequence_nll

    batch, logits = forward_batch(model, seqs, pad_id, device)
    mean_nll, sum_nll, n_tok = sequence_nll(logits, batch["labels"])
    return SeqStats(mean_nll=mean_nll, sum_nll=sum_nll, n_tokens=n_tok,
                    unit_ids=torch.tensor(unit_ids, device=device),
                    roles=[s.role for s in seqs],
                    logits=logits if keep_logits else None, labels=batch["labels"])
