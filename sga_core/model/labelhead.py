"""The language-model head at label positions only.

Prompt and padding positions carry no label, yet a causal LM computes (and, in float32,
upcasts) logits for every position: a [batch, sequence, vocabulary] tensor that is most of an
evaluation's memory and, for small models with large vocabularies, a large share of a
training step's compute. Here the model's forward runs as usual (through any DDP, FSDP or
DeepSpeed wrapper, so their hooks and gradient synchronisation are untouched), and a forward
pre-hook on the output embedding (``lm_head``) hands it only the hidden states of the
positions that predict a label:

- ``gather`` mode: the head computes logits for those N positions, ``[N, vocabulary]``, inside
  the model's forward (any logit post-processing of the model, such as soft-capping, applies);
- ``stash`` mode (plain, unsharded models of the known families): the head computes nothing;
  the N hidden states are kept and the caller applies the head chunk by chunk
  (:meth:`LabelOutput.chunks`), so no tensor is ever larger than ``chunk_rows x vocabulary``.

Position t-1 predicts label t; the N positions are taken in row-major order, the order of
``labels[:, 1:][labels[:, 1:] != -100]``. torch is imported inside the functions.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from sga_core.model.encoding import IGNORE

# families whose causal-LM forward is `lm_head(last hidden state)` with no post-processing
# other than Gemma's soft-capping (applied here from the config): stash mode is exact there
STASH_FAMILIES = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "phi", "phi3",
    "opt", "gpt2", "gpt_neox", "gemma", "gemma2", "olmo", "olmo2", "stablelm", "smollm3",
    "starcoder2", "falcon",
})
#: float32 elements per chunk of logits (64 Mi elements = 256 MiB).
CHUNK_ELEMENTS = 1 << 26


def unwrap(model):
    """The model inside DDP / DeepSpeed / compile wrappers."""
    seen = set()
    while id(model) not in seen:
        seen.add(id(model))
        for attr in ("module", "_orig_mod"):
            inner = getattr(model, attr, None)
            if inner is not None and hasattr(inner, "forward"):
                model = inner
                break
    return model


def has_head(model) -> bool:
    """Whether the model has a plain output head (a two-model wrapper such as WHP's
    combines whole logits and has none)."""
    return callable(getattr(unwrap(model), "get_output_embeddings", None))


def output_head(model):
    head = unwrap(model).get_output_embeddings()
    if head is None:
        raise ValueError(f"{type(model).__name__} has no output embeddings (lm_head)")
    return head


def can_stash(model) -> bool:
    """Whether the head may be applied outside the model's forward: a plain, unsharded model
    of a family whose forward does nothing after the head but what we repeat."""
    inner = unwrap(model)
    if type(inner).__name__ in ("FullyShardedDataParallel", "DeepSpeedEngine"):
        return False
    cfg = getattr(inner, "config", None)
    if getattr(cfg, "model_type", None) not in STASH_FAMILIES:
        return False
    if any(getattr(cfg, k, None) for k in ("logit_scale", "logits_scaling")):
        return False
    try:
        w = output_head(model).weight
    except (AttributeError, ValueError):
        return False
    # DeepSpeed ZeRO-3 keeps a placeholder (ds_id); FSDP2 a DTensor shard
    return w.numel() > 0 and not getattr(w, "ds_id", None) and \
        type(w).__name__ != "DTensor" and "FSDP" not in type(inner).__name__


def label_selection(labels):
    """``(positions [B, T] bool, targets [N], rows [N])``: the positions whose logits score
    a label, and for each scored token its label and row."""
    import torch

    shift = labels[:, 1:] != IGNORE
    pos = torch.zeros_like(labels, dtype=torch.bool)
    pos[:, :-1] = shift
    rows = shift.nonzero()[:, 0]
    return pos, labels[:, 1:][shift], rows


@dataclass
class LabelOutput:
    """The scored tokens of a padded batch: their labels, rows, and either their logits
    (``gather``) or their hidden states and the head to apply (``stash``)."""

    targets: Any  # [N] long
    rows: Any  # [N] long
    shape: tuple[int, int]  # (batch, sequence length - 1): where the scored tokens sit
    mask: Any  # [B, T-1] bool: labels[:, 1:] != -100
    logits: Any = None  # [N, V] (gather mode)
    hidden: Any = None  # [N, H] (stash mode)
    head: Any = None
    softcap: float | None = None

    @property
    def n(self) -> int:
        return int(self.targets.shape[0])

    def head_logits(self, start: int, stop: int):
        """Logits of scored tokens ``start:stop`` in the model's dtype."""
        if self.logits is not None:
            return self.logits[start:stop]
        h = self.hidden[start:stop]
        w = self.head.weight
        # outside the model's autocast the head computes in its weights' dtype
        out = self.head(h if h.dtype == w.dtype else h.to(w.dtype))
        if self.softcap:
            import torch

            out = torch.tanh(out / self.softcap) * self.softcap
        return out

    def chunks(self, vocab: int | None = None):
        """``(start, stop, logits)`` over the scored tokens, at most about
        :data:`CHUNK_ELEMENTS` logits at a time."""
        v = vocab or (self.logits.shape[-1] if self.logits is not None
                      else self.head.weight.shape[0])
        step = max(1, CHUNK_ELEMENTS // max(1, v))
        for s in range(0, self.n, step):
            yield s, min(self.n, s + step), self.head_logits(s, min(self.n, s + step))

    def all_logits(self):
        """All scored tokens' logits ``[N, V]`` (training and KL-style methods)."""
        return self.head_logits(0, self.n)

    def per_row(self, values):
        """Per-token values ``[N]`` placed back at their ``[B, T-1]`` positions (zeros
        elsewhere), so per-row sums add in the same order as over full logits."""
        import torch

        full = torch.zeros(self.shape, dtype=values.dtype, device=values.device)
        return full.masked_scatter(self.mask, values)


@contextlib.contextmanager
def at_labels(model, labels, stash: bool):
    """While open, the model's head sees only the label positions of ``labels``; yields a
    dict that gets ``"out"``: the :class:`LabelOutput` (complete after the forward)."""
    pos, targets, rows = label_selection(labels)
    head = output_head(model)
    box: dict = {}
    cfg = getattr(unwrap(model), "config", None)

    def pre(module, args):
        hidden = args[0]
        picked = hidden[pos.to(hidden.device)]
        if stash:
            box["hidden"] = picked
            return (picked[:0],) + tuple(args[1:])
        return (picked,) + tuple(args[1:])

    handle = head.register_forward_pre_hook(pre)
    try:
        yield box
    finally:
        handle.remove()
    box["out"] = LabelOutput(targets=targets, rows=rows, shape=tuple(labels[:, 1:].shape),
                             mask=labels[:, 1:] != IGNORE, hidden=box.get("hidden"),
                             head=head if stash else None,
                             softcap=getattr(cfg, "final_logit_softcapping", None))


def forward_labels(model, batch: dict, stash: bool | None = None) -> LabelOutput:
    """Run ``model`` on a collated batch with the head at label positions only."""
    if stash is None:
        stash = can_stash(model)
    labels = batch["labels"]
    if not has_head(model):  # full logits, then the label positions (no head to hook)
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                       use_cache=False).logits
        pos, targets, rows = label_selection(labels)
        return LabelOutput(targets=targets.to(logits.device), rows=rows.to(logits.device),
                           shape=tuple(labels[:, 1:].shape),
                           mask=(labels[:, 1:] != IGNORE).to(logits.device),
                           logits=logits[pos.to(logits.device)])
    with at_labels(model, labels, stash) as box:
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                       use_cache=False).logits
    out = box["out"]
    if not stash:
        out.logits = logits.reshape(-1, logits.shape[-1])
    out.targets, out.rows = out.targets.to(logits.device), out.rows.to(logits.device)
    out.mask = out.mask.to(logits.device)
    return out


def token_nll(out: LabelOutput, grad: bool = False):
    """Float32 NLL of each scored token ``[N]``. With ``grad`` the logits of all scored tokens
    go through one cross-entropy (autograd keeps them); without, chunk by chunk."""
    import torch
    import torch.nn.functional as F

    if grad:
        return F.cross_entropy(out.all_logits().float(), out.targets, reduction="none")
    parts = [F.cross_entropy(lg.float(), out.targets[s:e], reduction="none")
             for s, e, lg in out.chunks()]
    if not parts:
        return torch.zeros(0, dtype=torch.float32, device=out.targets.device)
    return torch.cat(parts)


def row_nll(out: LabelOutput, tok_nll):
    """``(mean_nll, sum_nll, n_tokens)`` per row from per-token NLLs (``nll``,
    docs/spec.md#11-per-sequence-nll)."""
    import torch

    full = out.per_row(tok_nll)
    n_tokens = out.mask.sum(dim=1)
    sum_nll = full.sum(dim=1)
    mean_nll = sum_nll / n_tokens.clamp(min=1).to(sum_nll.dtype)
    return mean_nll, sum_nll, n_tokens.to(torch.long)
