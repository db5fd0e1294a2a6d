"""The logit lens (nostalgebraist 2020): the residual stream after each block, read through
the model's own final norm and unembedding, at the positions that predict an answer token.

For each scored token of a sequence and each block ``l = 1..L``: the token's probability
under ``softmax(head(norm(h_l)))``, its rank there (1: the lens's top-1 prediction) and the
lens's top-1 token. The last block's reading is the model's own output (the same norm and
head the forward applies), so row ``L`` equals the token table's probabilities. A fact that
unlearning removed only near the head is still top-1 at some middle layer
(docs/token-probabilities.md#the-layer-view).

The model runs through the one batched inference loop
(:func:`sga_core.model.forward.per_sequence`); forward hooks on the blocks keep each block's
output for that forward, and the head is applied chunk by chunk, so no
``[layers, tokens, vocabulary]`` tensor is made. torch is imported inside the functions.
"""

from __future__ import annotations

import contextlib
from functools import partial

from sga_core.model.encoding import Encoder
from sga_core.model.forward import OnBatch, per_sequence

#: (blocks, final norm) attribute paths of the families the lens knows, tried in order:
#: Llama-style (Llama, SmolLM2, Mistral, Qwen, Gemma, OLMo, Phi-3), GPT-2 / Falcon, GPT-NeoX
PARTS = (("model.layers", "model.norm"), ("transformer.h", "transformer.ln_f"),
         ("gpt_neox.layers", "gpt_neox.final_layer_norm"))
LENS = "logit"  # the lens written without a tuned lens (sga_core.model.tuned_lens)
TUNED = "tuned"


class LensUnsupported(ValueError):
    """The model has no blocks, final norm and head the logit lens can read."""


def _attr(obj, path: str):
    for name in path.split("."):
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    return obj


def lens_parts(model):
    """``(blocks, final norm, head, softcap)`` of a causal LM, or :class:`LensUnsupported`
    saying why."""
    from sga_core.model.labelhead import has_head, output_head, unwrap

    inner = unwrap(model)
    if callable(getattr(inner, "get_base_model", None)):  # a PEFT model
        inner = inner.get_base_model()
    if not has_head(inner):
        raise LensUnsupported(f"{type(inner).__name__} has no output head to read layers "
                              "through")
    for blocks_at, norm_at in PARTS:
        blocks, norm = _attr(inner, blocks_at), _attr(inner, norm_at)
        if blocks is not None and norm is not None and len(blocks):
            cfg = getattr(inner, "config", None)
            return (list(blocks), norm, output_head(inner),
                    getattr(cfg, "final_logit_softcapping", None))
    raise LensUnsupported(f"{type(inner).__name__}: no blocks and final norm at "
                          + " or ".join(f"{b} + {n}" for b, n in PARTS))


@contextlib.contextmanager
def block_outputs(blocks):
    """While open, ``box["h"]`` holds each block's output hidden states ``[B, T, H]`` of the
    latest forward (a list, block order)."""
    box: dict = {"h": [None] * len(blocks)}

    def keep(i, module, args, out):
        box["h"][i] = (out[0] if isinstance(out, tuple) else out).detach()

    handles = [b.register_forward_hook(partial(keep, i)) for i, b in enumerate(blocks)]
    try:
        yield box
    finally:
        for h in handles:
            h.remove()


def _read(parts, box, decode, translate, res) -> list[dict]:
    """Per sequence of the batch ``res``: each layer's probability, rank and top-1 token of
    every scored token (layers outer, tokens inner); ``translate``: 0-based block -> the
    tuned lens's translator applied before the norm (a block without one: the logit lens)."""
    import torch

    from sga_core.model.labelhead import CHUNK_ELEMENTS

    _, norm, head, softcap = parts
    targets = res.targets
    step = max(1, CHUNK_ELEMENTS // max(1, int(head.weight.shape[0])))
    probs, ranks, tops = [], [], []
    for i, h in enumerate(box["h"]):
        picked = h[:, :-1][res.mask.to(h.device)]  # row-major: the targets' order
        tr = (translate or {}).get(i)
        p_l, r_l, t_l = [], [], []
        for s in range(0, picked.shape[0], step):
            chunk = picked[s:s + step]
            x = norm(tr(chunk).to(chunk.dtype) if tr is not None else chunk)
            w = head.weight
            logits = head(x if x.dtype == w.dtype else x.to(w.dtype)).float()
            if softcap:
                logits = torch.tanh(logits / softcap) * softcap
            tgt = targets[s:s + step].to(logits.device).unsqueeze(-1)
            own = logits.gather(-1, tgt)
            p_l.append(torch.softmax(logits, dim=-1).gather(-1, tgt).squeeze(-1))
            r_l.append((logits > own).sum(-1) + 1)
            t_l.append(logits.argmax(-1))
        probs.append(torch.cat(p_l).tolist() if p_l else [])
        ranks.append(torch.cat(r_l).tolist() if r_l else [])
        tops.append(torch.cat(t_l).tolist() if t_l else [])
    rows, ids = res.rows.cpu().tolist(), targets.cpu().tolist()
    out = [{"tokens": [], "token_ids": [], "probs": [[] for _ in probs],
            "ranks": [[] for _ in probs], "top1": [[] for _ in probs]}
           for _ in range(res.shape[0])]
    for k, r in enumerate(rows):
        rec = out[r]
        rec["tokens"].append(decode(ids[k]))
        rec["token_ids"].append(ids[k])
        for layer in range(len(probs)):
            rec["probs"][layer].append(round(probs[layer][k], 6))
            rec["ranks"][layer].append(int(ranks[layer][k]))
            rec["top1"][layer].append(decode(tops[layer][k]))
    return out


@contextlib.contextmanager
def lens_reader(model, enc: Encoder, translate: dict | None = None):
    """While open, yields ``read(res)``: for the batch of the latest forward of ``model``
    (``res``, its :class:`~sga_core.model.labelhead.LabelOutput`) one layer record per
    sequence (as :func:`layer_records`), so another reduction of the same forward can add
    the layer view (the stress tests' scoring). ``translate``: a tuned lens's translators
    (:func:`sga_core.model.tuned_lens.translators`). :class:`LensUnsupported` for a model
    the lens cannot read."""
    parts = lens_parts(model)
    names: dict[int, str] = {}

    def decode(i: int) -> str:
        if i not in names:
            names[i] = enc.tok.decode([i])
        return names[i]

    with block_outputs(parts[0]) as box:
        yield partial(_read, parts, box, decode, translate)


def layer_records(model, enc: Encoder, seqs, device="cpu", batch_size: int = 16,
                  on_batch: OnBatch = None, translate: dict | None = None) -> list[dict]:
    """One record per sequence: ``tokens``, ``token_ids`` and, per block (outer lists, first
    block first), each scored token's ``probs``, ``ranks`` and ``top1`` under the logit
    lens (or the tuned lens ``translate``). :class:`LensUnsupported` for a model the lens
    cannot read."""
    with lens_reader(model, enc, translate) as read:
        return per_sequence(model, seqs, enc.pad_id, read, device, batch_size,
                            on_batch=on_batch)


def row_layer_table(model, enc: Encoder, rows: list[dict], kind: str = "qa",
                    set_name: str = "forget", device="cpu", on_batch: OnBatch = None,
                    drop_last: bool = False, translate: dict | None = None) -> list[dict]:
    """:func:`layer_records` of each row's own answer, tagged with set and row index (as
    :func:`sga_core.model.forward.row_token_table`) and the lens read (``logit``, or
    ``tuned`` with ``translate``); ``drop_last``: without the last token (the end-of-text
    token a text evaluation's token table leaves out)."""
    recs = layer_records(model, enc, [enc.row(r, kind) for r in rows], device,
                         on_batch=on_batch, translate=translate)
    if drop_last:
        recs = [without_last(r) for r in recs]
    lens = TUNED if translate else LENS
    return [{"set": set_name, "index": i, "lens": lens, **rec} for i, rec in enumerate(recs)]


def without_last(rec: dict) -> dict:
    """A layer record without its last scored token."""
    out = {**rec, "tokens": rec["tokens"][:-1], "token_ids": rec["token_ids"][:-1]}
    for k in ("probs", "ranks", "top1"):
        out[k] = [layer[:-1] for layer in rec[k]]
    return out
