"""The model's forward passes, in one place.

One length-batched loop (:func:`per_sequence`: sequences sorted by length so each padded
batch wastes little, one forward per batch, results back in input order) serves

- scoring: :func:`batched_nll` / :func:`rows_nll`, the mean answer NLL of each sequence;
- per-token log-probabilities: :func:`sequence_logprobs` (Min-K%, perplexity);
- per-token probabilities with top-k alternatives: :func:`token_records` /
  :func:`row_token_table` (the paper's Figure 3, training probes, the probe page);

:func:`greedy_generate` is the model side of greedy generation (left-padded batches, the same
length batching), and :func:`forward_stats` the training forward with per-sequence statistics.
Every forward goes through :func:`forward_batch`; scoring, probes and the training loss run
the model's head only at label positions (:mod:`sga_core.model.labelhead`), so no
[batch, sequence, vocabulary] tensor is made, and inference applies it in chunks. torch is
imported inside the functions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from sga_core.model.encoding import Encoder, Sequence, collate

# called after each forward (each batch of generation) with the indices (into the input
# list) it held
OnBatch = Callable[[list[int]], None] | None
# generation: called after each new token of a batch with its indices and the tokens so far
OnStep = Callable[[list[int], int], None] | None


@dataclass
class SeqStats:
    """Per-sequence results of one forward pass over a padded batch."""

    mean_nll: Any  # tensor [n_seq]
    sum_nll: Any  # tensor [n_seq]
    n_tokens: Any  # tensor [n_seq]
    unit_ids: Any  # tensor [n_seq], position of the owning unit within the local batch
    roles: list[str]
    logits: Any = None  # tensor [n_seq, T, V]: only for methods with needs_logits = "full"
    labels: Any = None
    ref: SeqStats | None = None  # the frozen reference model's stats (same sequences)
    # methods with needs_logits: the logits of the scored (label) tokens only, [N, V], each
    # token's row in the batch [N] and label [N] (labelhead: row-major order)
    token_logits: Any = None
    token_rows: Any = None
    token_targets: Any = None


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


def forward_batch(model, seqs: list[Sequence], pad_id: int, device="cpu", *,
                  full: bool = False, stash: bool | None = None):
    """Collate ``seqs`` (right padding) and run the model once: ``(batch, out)``, where
    ``out`` is the :class:`~sga_core.model.labelhead.LabelOutput` of the label positions, or
    with ``full`` the logits of every position ``[B, T, V]``."""
    from sga_core.model.labelhead import forward_labels

    batch = {k: v.to(device) for k, v in collate(seqs, pad_id).items()}
    if full:
        return batch, model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                            use_cache=False).logits
    return batch, forward_labels(model, batch, stash)


def logits_budget(model) -> int | None:
    """How many scored tokens one inference forward may hold logits for: None where the
    head is applied chunk by chunk (stash mode); else (the head runs inside the model's
    forward on every scored token) as many as keep ``tokens x vocabulary`` within
    :data:`~sga_core.model.fusedloss.LOSS_BOUND`, the training loss's bound."""
    from sga_core.model import fusedloss
    from sga_core.model.labelhead import can_stash, has_head, output_head

    if has_head(model) and can_stash(model):
        return None
    try:
        vocab = int(output_head(model).weight.shape[0])
    except (AttributeError, ValueError):
        vocab = int(getattr(getattr(model, "config", None), "vocab_size", 0) or 0)
    return max(1, fusedloss.LOSS_BOUND // vocab) if vocab else None


def within_budget(part: list[int], seqs: list[Sequence], budget: int | None) -> list[list[int]]:
    """``part`` cut into consecutive pieces of at most ``budget`` scored tokens (a sequence
    above it alone); ``[part]`` without a budget."""
    if budget is None:
        return [part]
    pieces, cur, n = [], [], 0
    for i in part:
        k = seqs[i].n_scored
        if cur and n + k > budget:
            pieces.append(cur)
            cur, n = [], 0
        cur.append(i)
        n += k
    return pieces + ([cur] if cur else [])


def per_sequence(model, seqs: list[Sequence], pad_id: int, reduce: Callable, device="cpu",
                 batch_size: int = 16, batches: list[list[int]] | None = None,
                 on_batch: OnBatch = None) -> list:
    """THE batched inference loop: ``reduce(out)`` gives one value per sequence of a padded
    batch (``out``: its :class:`~sga_core.model.labelhead.LabelOutput`); the values come
    back in input order.

    ``batches`` (lists of indices into ``seqs``) fixes which sequences share a forward;
    by default :func:`length_batches` of ``batch_size``. A batch of more than ``batch_size``
    sequences is cut, so memory is bounded by ``batch_size`` whatever the grouping; and where
    the head computes every scored token's logits at once, cut again so that they stay
    within the training loss's bound (:func:`logits_budget`: a text batch scores every
    token). Inside a batch the sequences are ordered by length (a stable sort). The very
    first forward holds half of its batch, so that ``on_batch`` (told after every forward)
    hears of progress within the first batch: a stage of a single batch has an ETA before it
    ends, for one forward more.
    """
    out: list = [None] * len(seqs)
    if batches is None:
        batches = length_batches([len(s) for s in seqs], batch_size)
    step = max(1, batch_size)
    budget = logits_budget(model)
    first = True
    with inference(model):
        for group in batches:
            idx = sorted(group, key=lambda i: len(seqs[i]))
            for s in range(0, len(idx), step):
                parts = within_budget(idx[s:s + step], seqs, budget)
                if first and len(parts[0]) > 1:  # an early report: the first batch halved
                    half = len(parts[0]) // 2
                    parts[:1] = [parts[0][:half], parts[0][half:]]
                first = False
                for part in parts:
                    _, res = forward_batch(model, [seqs[i] for i in part], pad_id, device)
                    for i, v in zip(part, reduce(res)):
                        out[i] = v
                    if on_batch is not None:
                        on_batch(part)
    return out


def _mean_nll(res) -> list[float]:
    from sga_core.model.labelhead import row_nll, token_nll

    return row_nll(res, token_nll(res))[0].tolist()


def batched_nll(model, seqs: list[Sequence], pad_id: int, device="cpu", batch_size: int = 16,
                batches: list[list[int]] | None = None,
                on_batch: OnBatch = None) -> list[float]:
    """Mean answer NLL (``nll``, docs/spec.md#11-per-sequence-nll) for each sequence, in the input
    order."""
    return per_sequence(model, seqs, pad_id, _mean_nll, device, batch_size, batches, on_batch)


def rows_nll(model, enc: Encoder, rows: list[dict], kind: str = "qa", device="cpu",
             batch_size: int = 16, on_batch: OnBatch = None) -> list[float]:
    """Mean answer NLL of each data row's own answer (or continuation); ``on_batch`` is
    told the rows of each forward."""
    return batched_nll(model, [enc.row(r, kind) for r in rows], enc.pad_id, device, batch_size,
                       on_batch=on_batch)


def _logprob_lists(res) -> list[list[float]]:
    from sga_core.model.labelhead import token_nll

    lp = (-token_nll(res)).cpu().tolist()
    rows = res.rows.cpu().tolist()
    out: list[list[float]] = [[] for _ in range(res.shape[0])]
    for r, v in zip(rows, lp):
        out[r].append(v)
    return out


def sequence_logprobs(model, seqs: list[Sequence], pad_id: int, device="cpu",
                      batch_size: int = 16, on_batch: OnBatch = None) -> list[list[float]]:
    """The log-probability of each scored token of each sequence, in input order."""
    return per_sequence(model, seqs, pad_id, _logprob_lists, device, batch_size,
                        on_batch=on_batch)


def _vocab_stat_lists(res) -> list[dict]:
    import torch

    lp, mu, var = [], [], []
    for s, e, lg in res.chunks():
        logp = torch.log_softmax(lg.float(), dim=-1)
        p = logp.exp()
        m = (p * logp).sum(-1)
        lp.append(logp.gather(-1, res.targets[s:e].unsqueeze(-1)).squeeze(-1))
        mu.append(m)
        var.append((p * logp.square()).sum(-1) - m.square())
    cols = [torch.cat(c).cpu().tolist() if c else [] for c in (lp, mu, var)]
    out = [{"logprobs": [], "mu": [], "var": []} for _ in range(res.shape[0])]
    for k, r in enumerate(res.rows.cpu().tolist()):
        for key, col in zip(("logprobs", "mu", "var"), cols):
            out[r][key].append(col[k])
    return out


def sequence_vocab_stats(model, seqs: list[Sequence], pad_id: int, device="cpu",
                         batch_size: int = 16, on_batch: OnBatch = None) -> list[dict]:
    """Per sequence, for each scored token: its log-probability (``logprobs``), and the mean
    (``mu``) and variance (``var``) of the log-probability over the vocabulary under the
    model's next-token distribution there (Min-K%++'s normalisation)."""
    return per_sequence(model, seqs, pad_id, _vocab_stat_lists, device, batch_size,
                        on_batch=on_batch)


def _records(enc: Encoder, top_k: int, res) -> list[dict]:
    import torch

    ids, probs, tops_p, tops_i = [], [], [], []
    for s, e, lg in res.chunks():
        p_all = torch.softmax(lg.float(), dim=-1)
        probs.append(p_all.gather(-1, res.targets[s:e].unsqueeze(-1)).squeeze(-1))
        tp, ti = p_all.topk(top_k, dim=-1)
        tops_p.append(tp)
        tops_i.append(ti)
    rows = res.rows.cpu().tolist()
    ids = res.targets.cpu().tolist()
    p = torch.cat(probs).tolist() if probs else []
    tp = torch.cat(tops_p).tolist() if tops_p else []
    ti = torch.cat(tops_i).tolist() if tops_i else []
    out = [{"tokens": [], "token_ids": [], "probs": [], "top": []}
           for _ in range(res.shape[0])]
    for k, r in enumerate(rows):
        rec = out[r]
        rec["tokens"].append(enc.tok.decode([ids[k]]))
        rec["token_ids"].append(ids[k])
        rec["probs"].append(round(p[k], 6))
        rec["top"].append([[enc.tok.decode([t]), round(q, 5)] for t, q in zip(ti[k], tp[k])])
    return out


def token_records(model, enc: Encoder, seqs: list[Sequence], device="cpu", top_k: int = 5,
                  batch_size: int = 16, on_batch: OnBatch = None) -> list[dict]:
    """One record per sequence: tokens, token ids, probabilities, top-k alternatives."""
    return per_sequence(model, seqs, enc.pad_id, partial(_records, enc, top_k), device,
                        batch_size, on_batch=on_batch)


def row_token_table(model, enc: Encoder, rows: list[dict], kind: str = "qa", set_name="forget",
                    device="cpu", on_batch: OnBatch = None) -> list[dict]:
    """Token records for each row's own answer, tagged with set and row index."""
    recs = token_records(model, enc, [enc.row(r, kind) for r in rows], device,
                         on_batch=on_batch)
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


class _StopAtStrings:
    """A stopping criterion: a row is done once its new tokens, decoded, hold one of
    ``stops`` (the answer is cut there anyway: MUSE's KnowMem), so a batch stops when every
    row is, instead of running to ``max_new_tokens``."""

    def __init__(self, stops, decode, width: int):
        self.stops, self.decode, self.width = [s for s in stops if s], decode, width

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        done = [any(s in self.decode(row[self.width:].tolist()) for s in self.stops)
                for row in input_ids]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


class _Steps:
    """A stopping criterion that never stops: it tells ``on_step(idx, n)`` after each new
    token of the batch ``idx`` (``n``: the tokens generated so far), so that a long batch
    reports progress while it runs."""

    def __init__(self, on_step, idx: list[int], width: int):
        self.on_step, self.idx, self.width = on_step, idx, width

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        self.on_step(self.idx, int(input_ids.shape[1]) - self.width)
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


def greedy_generate(model, prompts: list[list[int]], pad_id: int, eos_id: int,
                    max_new_tokens: int, device="cpu", batch_size: int = 8,
                    on_batch: OnBatch = None, stop_strings=(), decode=None,
                    on_step: OnStep = None) -> list[list[int]]:
    """Greedy continuations of token-id prompts, batched by length with LEFT padding.

    Returns, in input order, each prompt's new token ids up to (not including) the first EOS.
    With ``stop_strings`` (and ``decode``, token ids -> text) a row stops once its text
    holds one of them: what comes after is cut by the caller, so the text before the first
    stop string is the same, only sooner. ``on_batch`` hears of each batch done,
    ``on_step`` of each token generated within one.
    """
    import torch
    from transformers import StoppingCriteriaList

    cfg = _greedy_config(model, max_new_tokens, pad_id, eos_id)
    stops = [s for s in stop_strings or () if s] if decode is not None else []
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
            criteria = ([_StopAtStrings(stops, decode, width)] if stops else []) + (
                [_Steps(on_step, idx, width)] if on_step is not None else [])
            extra = {"stopping_criteria": StoppingCriteriaList(criteria)} if criteria else {}
            gen = model.generate(input_ids=input_ids.to(device), attention_mask=mask.to(device),
                                 generation_config=cfg, **extra)
            for j, i in enumerate(idx):
                new = gen[j, width:].tolist()
                new = new[:new.index(eos_id)] if eos_id in new else new
                if stops and pad_id != eos_id:  # a row that stopped early is padded after
                    while new and new[-1] == pad_id:
                        new.pop()
                out[i] = new
            if on_batch is not None:
                on_batch(idx)
    return out


def forward_stats(model, seqs: list[Sequence], unit_ids: list[int], pad_id: int, device,
                  keep_logits: bool | str = False, loss_fn=None) -> SeqStats:
    """The training forward (with gradients) of one padded batch, per-sequence NLLs.

    The head runs only at label positions. ``keep_logits``: True keeps the scored tokens'
    logits (``token_logits``, for KL-style methods); "full" also runs the full-logits forward
    and keeps ``logits`` ``[B, T, V]``. ``loss_fn(out) -> [N]`` replaces the per-token
    cross-entropy (a fused linear cross-entropy; ``out`` is then in stash mode)."""
    import torch

    from sga_core.model.labelhead import row_nll, token_nll
    from sga_core.model.losses import sequence_nll

    ids = torch.tensor(unit_ids, device=device)
    roles = [s.role for s in seqs]
    if keep_logits == "full":
        batch, logits = forward_batch(model, seqs, pad_id, device, full=True)
        mean_nll, sum_nll, n_tok = sequence_nll(logits, batch["labels"])
        return SeqStats(mean_nll=mean_nll, sum_nll=sum_nll, n_tokens=n_tok, unit_ids=ids,
                        roles=roles, logits=logits, labels=batch["labels"])
    fused = loss_fn is not None and not keep_logits
    batch, out = forward_batch(model, seqs, pad_id, device, stash=True if fused else False)
    tok = loss_fn(out) if fused else token_nll(out, grad=True)
    mean_nll, sum_nll, n_tok = row_nll(out, tok)
    stats = SeqStats(mean_nll=mean_nll, sum_nll=sum_nll, n_tokens=n_tok, unit_ids=ids,
                     roles=roles, labels=batch["labels"])
    if keep_logits:
        stats.token_logits = out.all_logits()
        stats.token_rows, stats.token_targets = out.rows, out.targets
    return stats
