"""Model-side inputs of the metrics: candidate-answer NLLs of QA rows, per-token log-probs of
text rows (Min-K%, perplexity) and batched greedy generation (ROUGE, VerbMem, KnowMem).

torch is imported inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence

from sga_core.model.encoding import IGNORE, Encoder, collate
from sga_core.model.encoding import Sequence as TokSeq


def _as_encoder(enc_or_tok) -> Encoder:
    return enc_or_tok if isinstance(enc_or_tok, Encoder) else Encoder(enc_or_tok)


# ------------------------------------------------------------------------------------------
# QA candidates


def score_qa_candidates(model, encoder: Encoder, rows: Sequence[dict], device="cpu",
                        rows_per_batch: int = 4) -> list[dict]:
    """Mean answer NLL of every candidate answer of each QA row.

    Returns, per row, ``{"answer": x, "paraphrased": y or None, "perturbed": [..]}``. The
    candidates of ``rows_per_batch`` rows (answer, paraphrased answer, each perturbed answer)
    go through the model as ONE padded batch (``sga_core.scoring.batched_nll`` sorts them by
    length first).
    """
    from sga_core.model.forward import batched_nll

    enc = _as_encoder(encoder)
    rows = list(rows)
    out: list[dict] = []
    step = max(1, int(rows_per_batch))
    for start in range(0, len(rows), step):
        group = rows[start:start + step]
        seqs: list[TokSeq] = []
        slots: list[tuple[int, str]] = []  # (row in group, answer/paraphrased/perturbed)
        for i, row in enumerate(group):
            q = row["question"]
            seqs.append(enc.qa(q, row["answer"], role="eval"))
            slots.append((i, "answer"))
            para = row.get("paraphrased_answer")
            if isinstance(para, str) and para.strip():
                seqs.append(enc.qa(q, para, role="eval"))
                slots.append((i, "paraphrased"))
            for pert in row.get("perturbed_answer") or []:
                seqs.append(enc.qa(q, pert, role="eval"))
                slots.append((i, "perturbed"))
        nlls = batched_nll(model, seqs, enc.pad_id, device, batch_size=len(seqs))
        res = [{"answer": None, "paraphrased": None, "perturbed": []} for _ in group]
        for (i, kind), v in zip(slots, nlls):
            if kind == "perturbed":
                res[i]["perturbed"].append(float(v))
            else:
                res[i][kind] = float(v)
        out.extend(res)
    return out


def split_scores(scores: Sequence[dict]) -> tuple[list, list, list]:
    """``(nll_answer, nll_paraphrased_or_answer, nll_perturbed_lists)`` from
    :func:`score_qa_candidates` output, ready for the truth-ratio / probability metrics."""
    answer = [s["answer"] for s in scores]
    denom = [s["paraphrased"] if s.get("paraphrased") is not None else s["answer"]
             for s in scores]
    perturbed = [list(s.get("perturbed") or []) for s in scores]
    return answer, denom, perturbed


# ------------------------------------------------------------------------------------------
# Text rows


def _text_sequence(enc: Encoder, row, full_text: bool, include_eos: bool) -> TokSeq:
    if isinstance(row, str):
        seq = enc.text("", row, role="eval")
    elif full_text and isinstance(row.get("text"), str):
        seq = enc.text("", row["text"], role="eval")
    else:
        seq = enc.text(row.get("prompt") or "", row["continuation"], role="eval")
    if not include_eos and seq.labels and seq.labels[-1] == enc.eos_id:
        seq.labels[-1] = IGNORE
    return seq


def text_token_logprobs(model, encoder: Encoder, rows: Sequence[dict | str], device="cpu",
                        batch_size: int = 8, full_text: bool = True,
                        include_eos: bool = False) -> list[list[float]]:
    """Log-probability of each scored token of each text row, in input order.

    With ``full_text`` (default) a row's whole ``text`` field is scored from a start token
    (as MUSE / open-unlearning score MIA texts); otherwise only the ``continuation`` given its
    ``prompt``. A plain string is scored whole. The appended EOS is left out unless
    ``include_eos``. For Min-K% (:func:`~sga_core.metrics.min_k_percent_score`) and perplexity
    (:func:`~sga_core.metrics.perplexity_from_logprobs`).
    """
    from sga_core.model.forward import inference, length_batches
    from sga_core.model.losses import token_logprobs

    enc = _as_encoder(encoder)
    seqs = [_text_sequence(enc, r, full_text, include_eos) for r in rows]
    out: list[list[float]] = [[] for _ in seqs]
    with inference(model):
        for idx in length_batches([len(x) for x in seqs], batch_size):
            b = {k: v.to(device) for k, v in collate([seqs[i] for i in idx], enc.pad_id).items()}
            logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                           use_cache=False).logits
            lp = token_logprobs(logits, b["labels"]).cpu()
            mask = (b["labels"][:, 1:] != IGNORE).cpu()
            for j, i in enumerate(idx):
                out[i] = lp[j][mask[j]].tolist()
    return out


# ------------------------------------------------------------------------------------------
# Generation


def _prompt_ids(enc: Encoder, prompt: str, kind: str) -> list[int]:
    if kind == "qa":
        return list(enc.prompt_ids(prompt))
    if kind != "text":
        raise ValueError(f"kind must be 'qa' or 'text', got {kind!r}")
    bos = [enc.tok.bos_token_id] if enc.tok.bos_token_id is not None else []
    ids = bos + (enc.tok(prompt, add_special_tokens=False)["input_ids"] if prompt else [])
    return ids or [enc.eos_id]


def generate_answers(model, encoder, prompts: Sequence[str], max_new_tokens: int = 64,
                     kind: str = "qa", device="cpu", batch_size: int = 8,
                     max_prompt_tokens: int | None = None) -> list[str]:
    """Greedy generations for ``prompts``, batched with LEFT padding, in input order.

    ``kind='qa'``: each prompt is a question, wrapped like training prompts (chat template
    when the tokenizer has one); ``kind='text'``: each prompt is a raw prefix (after a start
    token). ``encoder`` is an :class:`~sga_core.encoding.Encoder` or a tokenizer. Prompts
    longer than ``max_prompt_tokens`` (default: the encoder's ``max_length``) keep their end.
    Returns the new text only, decoded without special tokens and stripped.
    """
    import copy

    import torch

    from sga_core.model.forward import inference, length_batches

    enc = _as_encoder(encoder)
    limit = max_prompt_tokens or enc.max_length
    ids = [_prompt_ids(enc, p, kind)[-limit:] for p in prompts]
    out = [""] * len(ids)
    gen_cfg = copy.deepcopy(model.generation_config)
    gen_cfg.do_sample = False
    for attr in ("temperature", "top_p", "top_k", "typical_p", "min_p"):
        if hasattr(gen_cfg, attr):
            setattr(gen_cfg, attr, None)
    gen_cfg.num_beams = 1
    gen_cfg.max_new_tokens = int(max_new_tokens)
    gen_cfg.max_length = None
    gen_cfg.pad_token_id = enc.pad_id
    gen_cfg.eos_token_id = enc.eos_id
    with inference(model):
        for idx in length_batches([len(x) for x in ids], batch_size):
            width = max(len(ids[i]) for i in idx)
            input_ids = torch.full((len(idx), width), enc.pad_id, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for j, i in enumerate(idx):
                n = len(ids[i])
                input_ids[j, width - n:] = torch.tensor(ids[i])
                mask[j, width - n:] = 1
            gen = model.generate(input_ids=input_ids.to(device), attention_mask=mask.to(device),
                                 generation_config=gen_cfg)
            for j, i in enumerate(idx):
                new = gen[j, width:].tolist()
                if enc.eos_id in new:
                    new = new[:new.index(enc.eos_id)]
                out[i] = enc.tok.decode(new, skip_special_tokens=True).strip()
    return out
