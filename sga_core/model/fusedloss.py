"""A fused linear cross-entropy for the training loss (``training.fused_loss``): the head and
the per-token cross-entropy in one pass over chunks, so the scored tokens' logits are never
held at once (for large vocabularies most of a step's activation memory).

- ``liger``: liger-kernel's Triton kernel (GPU only; ``requirements-gpu.txt``; its import is
  guarded, and asking for it without it installed is a clear error);
- ``chunked``: the same in plain PyTorch: the head and cross-entropy per chunk of tokens under
  activation checkpointing (the chunk's logits are recomputed in the backward pass), on any
  device;
- ``auto``: liger on a GPU where it is installed and the model is not sharded; else, for a
  model whose head can be applied here, ``bounded``: the plain loss of ``off`` for a batch
  whose scored tokens x vocabulary stay within :data:`LOSS_BOUND` logits (the same numbers),
  ``chunked`` above it (a text batch: every token is scored, so 16 sequences of 1,024 tokens
  over a 49,152-token vocabulary would be 3.2 GB of float32 logits, held with their
  gradient); a sharded model: off;
- ``off``: the head on all scored tokens, one cross-entropy (the default numbers).

Either returns the per-token NLL ``[N]`` of a stash-mode
:class:`~sga_core.model.labelhead.LabelOutput`; per-sequence NLLs then follow as usual.
"""

from __future__ import annotations

import importlib.util

MODES = ("auto", "off", "chunked", "liger")
#: scored tokens x vocabulary above which ``auto`` chunks the loss: 64 Mi logits (256 MiB
#: float32), one chunk of :data:`~sga_core.model.labelhead.CHUNK_ELEMENTS`; a QA batch stays
#: below it (its numbers are those of ``off``).
LOSS_BOUND = 1 << 26


def liger_available() -> bool:
    return importlib.util.find_spec("liger_kernel") is not None


def choose(mode: str, *, on_gpu: bool, stashable: bool) -> str:
    """The loss a run uses: ``off``, ``chunked``, ``liger`` or ``bounded`` (``auto`` without
    liger: chunked only for a batch above :data:`LOSS_BOUND`)."""
    if mode not in MODES:
        raise ValueError(f"training.fused_loss: {mode!r} is not one of {list(MODES)}")
    if mode == "auto":
        if not stashable:
            return "off"
        return "liger" if on_gpu and liger_available() else "bounded"
    if mode != "off" and not stashable:
        raise ValueError(f"training.fused_loss {mode!r}: the model's head cannot be applied "
                         "outside its forward here (a sharded model, or a family not known "
                         "to apply its head plainly); use 'off'")
    if mode == "liger":
        if not on_gpu:
            raise ValueError("training.fused_loss 'liger' needs a GPU (Triton kernels); use "
                             "'chunked' or 'off' on the CPU")
        if not liger_available():
            raise ValueError("training.fused_loss 'liger': liger-kernel is not installed "
                             "(pip install -r requirements-gpu.txt)")
    return mode


def chunked_token_nll(out, chunk_rows: int | None = None, compute_dtype=None):
    """Per-token NLL ``[N]`` in float32, head + cross-entropy per chunk, checkpointed.
    ``compute_dtype``: the head's matmul dtype (bf16 under bf16 mixed precision), else the
    weights'."""
    import torch
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    from sga_core.model.labelhead import CHUNK_ELEMENTS

    dt = compute_dtype or out.head.weight.dtype
    w = out.head.weight.to(dt)
    bias = getattr(out.head, "bias", None)
    bias = None if bias is None else bias.to(dt)
    step = chunk_rows or max(1, CHUNK_ELEMENTS // max(1, w.shape[0]))

    def piece(h, t):
        logits = F.linear(h.to(dt), w, bias)
        if out.softcap:
            logits = torch.tanh(logits / out.softcap) * out.softcap
        return F.cross_entropy(logits.float(), t, reduction="none")

    parts = [checkpoint(piece, out.hidden[s:s + step], out.targets[s:s + step],
                        use_reentrant=False) for s in range(0, out.n, step)]
    if not parts:
        return out.hidden.new_zeros(0, dtype=torch.float32)
    return torch.cat(parts)


def bounded_token_nll(out, compute_dtype=None, bound: int | None = None):
    """Per-token NLL ``[N]``: one cross-entropy over all scored tokens' logits (as ``off``)
    while ``N x vocabulary`` is at most ``bound`` (default :data:`LOSS_BOUND`), else
    :func:`chunked_token_nll`, so a batch's logits never exceed about ``bound`` floats."""
    import torch.nn.functional as F

    w = out.head.weight
    if out.n * int(w.shape[0]) > (LOSS_BOUND if bound is None else bound):
        return chunked_token_nll(out, compute_dtype=compute_dtype)
    dt = compute_dtype or w.dtype
    if dt == w.dtype:
        logits = out.head_logits(0, out.n)
    else:
        import torch

        bias = getattr(out.head, "bias", None)
        logits = F.linear(out.hidden.to(dt), w.to(dt), None if bias is None else bias.to(dt))
        if out.softcap:
            logits = torch.tanh(logits / out.softcap) * out.softcap
    return F.cross_entropy(logits.float(), out.targets, reduction="none")


def liger_token_nll(out, compute_dtype=None):
    """Per-token NLL ``[N]`` by liger-kernel's fused linear cross-entropy."""
    from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss

    dt = compute_dtype or out.hidden.dtype
    bias = getattr(out.head, "bias", None)
    fn = LigerFusedLinearCrossEntropyLoss(reduction="none", softcap=out.softcap)
    loss = fn(out.head.weight.to(dt), out.hidden.to(dt), out.targets,
              None if bias is None else bias.to(dt))
    return (loss[0] if isinstance(loss, tuple) else loss).float()


def loss_function(mode: str, mixed_precision: str | None = None):
    """The per-token loss for ``forward_stats(loss_fn=...)``, None for ``off``; under bf16 or
    fp16 mixed precision the head's matmul runs in that dtype, as it would in the model."""
    from functools import partial

    fn = {"off": None, "chunked": chunked_token_nll, "liger": liger_token_nll,
          "bounded": bounded_token_nll}[mode]
    if fn is None or mixed_precision not in ("bf16", "fp16"):
        return fn
    import torch

    return partial(fn, compute_dtype=torch.bfloat16 if mixed_precision == "bf16"
                   else torch.float16)


def for_run(mode: str, acc, model):
    """The per-token loss of a run (None: the plain cross-entropy): ``training.fused_loss``
    chosen for its device and model, in its mixed-precision dtype."""
    from sga_core.model.labelhead import can_stash

    return loss_function(choose(mode, on_gpu=acc.device.type == "cuda",
                                stashable=can_stash(model)), acc.mixed_precision)
