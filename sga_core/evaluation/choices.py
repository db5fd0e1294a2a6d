"""The model side of multiple-choice accuracy (:mod:`sga_core.metrics.multiple_choice`): the
log-likelihood of each choice's continuation after the prompt, as lm-evaluation-harness's
``HFLM`` computes it for a ``multiple_choice`` task (EleutherAI/lm-evaluation-harness at
4e7e0d4, lm-eval 0.4.13):

- ``api/model.py`` ``_encode_pair``: trailing spaces of the context move to the
  continuation; the context and context + continuation are encoded whole, and the
  continuation's tokens are those of the whole past the context's;
- ``models/huggingface.py`` ``tok_encode``: ``tokenizer.encode`` with the tokenizer's own
  special tokens, none when the text already starts with the BOS string;
  ``_loglikelihood_tokens``: the sum of the continuation tokens' log-softmax, the sequence
  cut from the left to the model's length (``models/utils.py`` ``resolve_max_length``:
  ``n_positions``, ``max_position_embeddings`` or ``n_ctx`` of its config, else the
  tokenizer's ``model_max_length``, else 2048).

As lm-eval (``Collator`` ``group_by="contexts"``, its one-token continuation cache), the
choices " A" ... " D" of a row, one token each after the same context, come from one forward
of the context; other continuations get a forward each. One difference: a prompt longer than
the model's length keeps its last ``max_length`` tokens here, ``max_length + 1`` there (the
last of them only a target); none for any prompt that fits. torch is imported inside the
functions only.
"""

from __future__ import annotations

import time

from sga_core.evaluation.common import Progress
from sga_core.metrics import multiple_choice as mc
from sga_core.metrics.context import CHOICE_LOGLIKS, SetData

DEFAULT_MAX_LENGTH = 2048  # lm-eval models/utils.py DEFAULT_MAX_LENGTH
TOKENIZER_INFINITY = 1000000000000000019884624838656  # lm-eval models/utils.py


def model_max_length(model, tok) -> int:
    """The context length lm-eval gives a model (``resolve_max_length``)."""
    cfg = getattr(model, "config", None)
    cfg = getattr(cfg, "text_config", None) or cfg
    for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(cfg, attr, None)
        if value is not None:
            return int(value)
    given = getattr(tok, "model_max_length", None)
    return int(given) if given is not None and given != TOKENIZER_INFINITY \
        else DEFAULT_MAX_LENGTH


def tok_encode(tok, text: str) -> list[int]:
    """lm-eval ``HFLM.tok_encode``: the tokenizer's own special tokens, unless the text
    already starts with the BOS (else EOS) string."""
    prefix = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    start = tok.decode(prefix) if prefix is not None else None
    if start and text.startswith(start):
        return list(tok.encode(text, add_special_tokens=False))
    return list(tok.encode(text))


def encode_pair(tok, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """lm-eval ``_encode_pair`` (causal models): ``(context tokens, continuation tokens)``."""
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces > 0:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    whole = tok_encode(tok, context + continuation)
    ctx = tok_encode(tok, context)
    return ctx, whole[len(ctx):]


def _tail_logprobs(ids: list[int]):
    """A ``per_sequence`` reduce: per sequence, the log-softmax of its one scored position
    at the token ids ``ids`` (lm-eval's one-token continuation cache: the choices " A" ...
    " D" share one forward of their context)."""
    def reduce(res) -> list:
        import torch

        want = torch.tensor(ids, dtype=torch.long)
        out: list = [None] * res.shape[0]
        rows = res.rows.cpu().tolist()
        for s, e, lg in res.chunks():
            lp = torch.log_softmax(lg.float(), dim=-1)[:, want.to(lg.device)].cpu().tolist()
            for k in range(e - s):
                out[rows[s + k]] = lp[k]
        return out
    return reduce


def choice_loglikelihoods(model, enc, set_name: str, rows: list[dict], device="cpu",
                          batch_size: int = 16, progress: Progress = None,
                          share: bool = True) -> list[list[float]]:
    """Per row, the log-likelihood of each choice's continuation after its prompt
    (:func:`~sga_core.metrics.multiple_choice.prompt` of ``set_name``), in choice order.
    A row whose continuations are one token each after the same context tokens (" A" ...
    " D" after "Answer:") is scored in one forward of its context, as lm-eval's
    one-token continuation cache does; any other row (every row: ``share`` False), one
    forward per choice."""
    from sga_core.evaluation.inputs import counter
    from sga_core.model.encoding import IGNORE
    from sga_core.model.encoding import Sequence as TokSeq
    from sga_core.model.forward import per_sequence, sequence_logprobs

    tok = enc.tok
    limit = model_max_length(model, tok)
    pairs = [[encode_pair(tok, mc.prompt(set_name, r), c) for c in mc.continuations(r)]
             for r in rows]
    shared = [share and all(ctx == p[0][0] and len(tail) == 1 for ctx, tail in p)
              for p in pairs]
    ids = sorted({tail[0] for p, one in zip(pairs, shared) if one for _, tail in p})
    seqs, owner = [], []  # one sequence per shared row, else one per choice
    for i, p in enumerate(pairs):
        for ctx, tail in (p[:1] if shared[i] else p):
            full = (ctx + tail)[-limit:]
            seqs.append(TokSeq(full, [IGNORE] * (len(full) - len(tail)) + tail, role="eval"))
            owner.append(i)
    stage = counter(progress, f"scoring {set_name} choices", len(seqs))
    one = [k for k, i in enumerate(owner) if shared[i]]
    many = [k for k, i in enumerate(owner) if not shared[i]]
    got: dict[int, list] = {}
    if one:
        vals = per_sequence(model, [seqs[k] for k in one], enc.pad_id, _tail_logprobs(ids),
                            device, batch_size, on_batch=stage)
        got.update(zip(one, vals))
    if many:
        got.update(zip(many, sequence_logprobs(model, [seqs[k] for k in many], enc.pad_id,
                                               device, batch_size, on_batch=stage)))
    out: list[list[float]] = [[] for _ in rows]
    at = {t: j for j, t in enumerate(ids)}
    for k, i in enumerate(owner):
        if shared[i]:
            out[i] = [float(got[k][at[tail[0]]]) for _, tail in pairs[i]]
        else:
            out[i].append(float(sum(got[k])))
    return out


def fill_choices(model, enc, sets: dict[str, SetData], instances, batch_size: int,
                 device, progress: Progress = None) -> dict[str, float]:
    """The choices' log-likelihoods (and prompts) of every set a metric needs them of;
    returns the timings."""
    from sga_core.evaluation.compute import sets_needing

    names = sets_needing(instances, sets, CHOICE_LOGLIKS)
    if not names:
        return {}
    t0 = time.time()
    for n in names:
        d = sets[n]
        d.prompts = [mc.prompt(n, r) for r in d.rows]
        d.choice_lls = choice_loglikelihoods(model, enc, n, d.rows, device, batch_size,
                                             progress)
    return {"choices_s": round(time.time() - t0, 3)}


def sample_fields(d: SetData, j: int) -> dict:
    """A multiple-choice row's per-sample fields: its prompt, the right choice and the one
    the model chose (``letter. text``)."""
    row = d.rows[j]

    def named(k: int) -> str:
        return f"{mc.LETTERS[k]}. {row['choices'][k]}"

    out = {"prompt": d.prompts[j] if d.prompts else None, "reference": named(row["answer"])}
    if d.choice_lls is not None:
        out["generated"] = named(mc.argmax(d.choice_lls[j]))
    return out
