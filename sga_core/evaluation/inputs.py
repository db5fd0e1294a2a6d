"""Model-side inputs of the metrics, built on the one batched forward module
(:mod:`sga_core.model.forward`): candidate-answer NLLs of QA rows, per-token log-probs of
text rows (Min-K%, perplexity) and greedy generation (ROUGE, VerbMem, KnowMem).

This module turns rows into token sequences (chat template, truncation, EOS) and results
back into rows; the batching and the forwards are the forward module's.
torch is imported inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence

from sga_core.evaluation.common import Progress, report
from sga_core.model.encoding import IGNORE, Encoder
from sga_core.model.encoding import Sequence as TokSeq


def as_encoder(enc_or_tok) -> Encoder:
    return enc_or_tok if isinstance(enc_or_tok, Encoder) else Encoder(enc_or_tok)


# ------------------------------------------------------------------------------------------
# QA candidates


def candidate_slots(row: dict) -> list[tuple[str, str]]:
    """A QA row's candidate answers as ``(slot, text)``: ``answer``, ``paraphrased`` (when
    the row has one), then each ``perturbed`` answer."""
    out = [("answer", row["answer"])]
    para = row.get("paraphrased_answer")
    if isinstance(para, str) and para.strip():
        out.append(("paraphrased", para))
    return out + [("perturbed", p) for p in row.get("perturbed_answer") or []]


def qa_candidates(row: dict) -> list[str]:
    """A QA row's candidate answers: the answer, its paraphrase (if any), each perturbed one."""
    return [text for _, text in candidate_slots(row)]


def qa_batches(enc, rows: Sequence[dict], batch_size: int) -> list[list[int]]:
    """Groups of row indices, each scored as one padded batch of all its rows' candidates
    (answer, paraphrase, perturbed answers): rows sorted by their longest candidate, packed
    up to ``batch_size`` sequences (one row at least; the forward loop cuts a row with more
    candidates into batches of ``batch_size``), so little of each batch is padding."""
    sized = []
    for i, row in enumerate(rows):
        cands = qa_candidates(row)
        longest = max(len(enc.qa(row["question"], c, role="eval")) for c in cands)
        sized.append((longest, len(cands), i))
    sized.sort()
    groups: list[list[int]] = []
    cur: list[int] = []
    n_seqs = 0
    for _, n, i in sized:
        if cur and n_seqs + n > batch_size:
            groups.append(cur)
            cur, n_seqs = [], 0
        cur.append(i)
        n_seqs += n
    if cur:
        groups.append(cur)
    return groups


def score_qa_candidates(model, encoder, rows: Sequence[dict], device="cpu",
                        rows_per_batch: int = 4, *, batch_size: int | None = None,
                        progress: Progress = None,
                        stage: str = "scoring answers") -> list[dict]:
    """Mean answer NLL of every candidate answer of each QA row, in input order.

    Returns, per row, ``{"answer": x, "paraphrased": y or None, "perturbed": [..]}``. The
    candidates of a group of rows go through the model as one padded batch: groups of
    ``rows_per_batch`` consecutive rows, or with ``batch_size`` the :func:`qa_batches`
    packing (the evaluation's). No forward holds more than ``batch_size`` (default 16)
    sequences: a row with more candidates than that is scored over several batches, so the
    memory is bounded by the batch size, never by the number of candidates. ``progress``
    hears ``stage`` after every forward: done / total candidate answers.
    """
    from sga_core.model.forward import batched_nll

    enc = as_encoder(encoder)
    rows = list(rows)
    if batch_size is not None:
        groups = qa_batches(enc, rows, batch_size)
    else:
        step = max(1, int(rows_per_batch))
        groups = [list(range(s, min(s + step, len(rows)))) for s in range(0, len(rows), step)]
    seqs: list[TokSeq] = []
    slots: list[tuple[int, str]] = []  # (row, answer / paraphrased / perturbed)
    seq_groups: list[list[int]] = []
    for g in groups:
        first = len(seqs)
        for i in g:
            for kind, text in candidate_slots(rows[i]):
                seqs.append(enc.qa(rows[i]["question"], text, role="eval"))
                slots.append((i, kind))
        seq_groups.append(list(range(first, len(seqs))))
    nlls = batched_nll(model, seqs, enc.pad_id, device, batch_size=batch_size or 16,
                       batches=seq_groups, on_batch=counter(progress, stage, len(seqs)))
    out = [{"answer": None, "paraphrased": None, "perturbed": []} for _ in rows]
    for (i, kind), v in zip(slots, nlls):
        if kind == "perturbed":
            out[i]["perturbed"].append(float(v))
        else:
            out[i][kind] = float(v)
    return out


# ------------------------------------------------------------------------------------------
# Text rows


def text_sequence(enc: Encoder, row, full_text: bool, include_eos: bool) -> TokSeq:
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
                        include_eos: bool = False, *, progress: Progress = None,
                        stage: str = "scoring texts") -> list[list[float]]:
    """Log-probability of each scored token of each text row, in input order.

    With ``full_text`` (default) a row's whole ``text`` field is scored from a start token
    (as MUSE / open-unlearning score MIA texts); otherwise only the ``continuation`` given its
    ``prompt``. A plain string is scored whole. The appended EOS is left out unless
    ``include_eos``. For Min-K% (:func:`~sga_core.metrics.min_k_percent_score`) and perplexity
    (:func:`~sga_core.metrics.perplexity_from_logprobs`). ``progress`` hears ``stage``
    after each forward (done / total rows; the first batch in two halves), so the stage
    shows an ETA.
    """
    from sga_core.model.forward import sequence_logprobs

    enc = as_encoder(encoder)
    seqs = [text_sequence(enc, r, full_text, include_eos) for r in rows]
    return sequence_logprobs(model, seqs, enc.pad_id, device, batch_size,
                             on_batch=counter(progress, stage, len(seqs)))


def text_vocab_stats(model, encoder: Encoder, rows: Sequence[dict | str], device="cpu",
                     batch_size: int = 8, *, progress: Progress = None,
                     stage: str = "scoring texts") -> list[dict]:
    """Per text row, scored whole as :func:`text_token_logprobs` scores it: each token's
    log-probability and the vocabulary's mean and variance of the log-probability there
    (:func:`~sga_core.model.forward.sequence_vocab_stats`, for Min-K%++)."""
    from sga_core.model.forward import sequence_vocab_stats

    enc = as_encoder(encoder)
    seqs = [text_sequence(enc, r, True, False) for r in rows]
    return sequence_vocab_stats(model, seqs, enc.pad_id, device, batch_size,
                                on_batch=counter(progress, stage, len(seqs)))


def fill_token_inputs(model, enc: Encoder, sets, instances, sequence, text, *, device,
                      batch_size: int, progress: Progress,
                      stage: str = "scoring texts", grad_norms: bool = False,
                      drop_last: bool = False) -> None:
    """The token log-probs (and where a metric reads them, Min-K%++'s vocabulary
    statistics) of every row of the sets whose metrics need them, in one forward per
    batch: ``sequence(row)`` is the row's token sequence (its labelled tokens are scored),
    ``text(row)`` the text the set's ``texts`` keep (ZLib compresses it). With
    ``grad_norms``, also each row's :func:`gradient_norms` where a metric reads them
    (``drop_last``: without the last scored token, a QA answer's EOS)."""
    from sga_core.evaluation.compute import flat_rows, scatter, sets_needing
    from sga_core.metrics.context import GRAD_NORMS, TOKEN_LOGPROBS, TOKEN_VOCAB_STATS
    from sga_core.model.forward import sequence_logprobs, sequence_vocab_stats

    for n in sets_needing(instances, sets, GRAD_NORMS) if grad_norms else []:
        seqs = [sequence(r) for r in sets[n].rows]
        sets[n].grad_norms = gradient_norms(model, seqs, enc.pad_id, device, drop_last,
                                            on_row=counter(progress, f"GradNorm of {n}",
                                                           len(seqs)))

    with_stats = sets_needing(instances, sets, TOKEN_VOCAB_STATS)
    names = sets_needing(instances, sets, TOKEN_LOGPROBS)
    names += [n for n in with_stats if n not in names]
    rows = flat_rows(sets, names)
    seqs = [sequence(r) for r in rows]
    texts = [text(r) for r in rows]
    count = counter(progress, stage, len(seqs)) if seqs else None
    if with_stats:  # one forward gives every token's log-prob and Min-K%++'s statistics
        stats = sequence_vocab_stats(model, seqs, enc.pad_id, device, batch_size,
                                     on_batch=count)
        lps = [s["logprobs"] for s in stats]
        scatter(sets, names, stats, "vocab_stats")
        for n in names:
            if n not in with_stats:
                sets[n].vocab_stats = None  # kept only where a metric reads them
    else:
        lps = sequence_logprobs(model, seqs, enc.pad_id, device, batch_size,
                                on_batch=count) if seqs else []
    scatter(sets, names, lps, "logprobs")
    scatter(sets, names, texts, "texts")


def gradient_norms(model, seqs: Sequence[TokSeq], pad_id: int, device="cpu",
                   drop_last: bool = False, p: float = 2, on_row=None) -> list[float | None]:
    """open-unlearning's GradNorm statistic (``mia/gradnorm.py``, batch size 1): per
    sequence, the mean over the model's parameters of the ``p``-norm of each parameter's
    gradient of the mean NLL of its scored tokens (``drop_last``: the last one left out, as
    ``tokenwise_logprobs`` leaves out the EOS); None for a sequence without scored tokens.

    Cost: one forward and one backward pass per sequence, and gradients as large as the
    model (freed after each). The model stays in eval mode (OU switches to train mode,
    which differs only where dropout is on; Llama-family models have none) and its
    parameters are left as they were."""
    import torch

    from sga_core.model.encoding import collate

    params = list(model.parameters())
    wanted = [q.requires_grad for q in params]
    was_training = model.training
    model.eval()
    out: list[float | None] = []
    try:
        for q in params:
            q.requires_grad_(True)
        for i, seq in enumerate(seqs):
            batch = collate([seq], pad_id)
            ids = batch["input_ids"].to(device)
            scored = (batch["labels"][0] != IGNORE).nonzero()[:, 0]
            scored = scored[:-1] if drop_last else scored
            if len(scored) == 0 or int(scored[0]) == 0:
                out.append(None)
            else:
                model.zero_grad(set_to_none=True)
                with torch.enable_grad():
                    logits = model(input_ids=ids,
                                   attention_mask=batch["attention_mask"].to(device)).logits
                    lg = logits[0, scored.to(device) - 1]
                    logp = torch.log_softmax(lg.float() if lg.dtype in (torch.float16,
                                                                        torch.bfloat16)
                                             else lg, -1)
                    lp = logp.gather(-1, ids[0, scored.to(device)].unsqueeze(-1))[:, 0]
                    (-lp.mean()).backward()
                norms = [q.grad.detach().norm(p=p) for q in params
                         if q.grad is not None]
                out.append(float(torch.stack(norms).mean()))
                model.zero_grad(set_to_none=True)
            if on_row is not None:
                on_row([i])
    finally:
        for q, w in zip(params, wanted):
            q.requires_grad_(w)
        model.train(was_training)
    return out


def answer_text(enc: Encoder, seq: TokSeq) -> str:
    """A sequence's labelled tokens decoded without special tokens (open-unlearning
    utils.py extract_target_texts_from_processed_data: ZLib's text of a QA row)."""
    return enc.tok.decode([t for t in seq.labels if t != IGNORE], skip_special_tokens=True)


def counter(progress: Progress, stage: str, total: int):
    """An ``on_batch`` callback that reports ``stage`` done / ``total`` to ``progress``
    (``0 / total`` at once: the stage has begun)."""
    if progress is None:
        return None
    done = [0]
    report(progress, stage, 0, total)

    def on_batch(idx: list[int]) -> None:
        done[0] += len(idx)
        report(progress, stage, min(done[0], total), total)

    return on_batch


# ------------------------------------------------------------------------------------------
# Generation


def prompt_ids(enc: Encoder, prompt: str, kind: str) -> list[int]:
    """The token ids generation starts from: a question wrapped like training prompts
    (``kind='qa'``), or a raw prefix after a start token (``kind='text'``)."""
    if kind == "qa":
        return list(enc.prompt_ids(prompt))
    if kind != "text":
        raise ValueError(f"kind must be 'qa' or 'text', got {kind!r}")
    bos = [enc.tok.bos_token_id] if enc.tok.bos_token_id is not None else []
    ids = bos + (enc.tok(prompt, add_special_tokens=False)["input_ids"] if prompt else [])
    return ids or [enc.eos_id]


def generate_answers(model, encoder, prompts: Sequence[str], max_new_tokens: int = 64,
                     kind: str = "qa", device="cpu", batch_size: int = 8,
                     max_prompt_tokens: int | None = None, *, progress: Progress = None,
                     stage: str = "generating", stop_strings: Sequence[str] = ()) -> list[str]:
    """Greedy generations for ``prompts``, batched by length with LEFT padding, in input order.

    ``kind='qa'``: each prompt is a question, wrapped like training prompts (chat template
    when the tokenizer has one); ``kind='text'``: each prompt is a raw prefix (after a start
    token). ``encoder`` is an :class:`~sga_core.model.encoding.Encoder` or a tokenizer.
    Prompts longer than ``max_prompt_tokens`` (default: the encoder's ``max_length``) keep
    their end. Returns the new text only, decoded without special tokens and stripped.
    ``stop_strings``: a row stops generating once its text holds one (the caller cuts
    there: :func:`cut_at`), so a batch of short answers ends early. ``progress`` hears
    ``"<stage> (tokens)"`` after every token: done / total new tokens (each row's
    ``max_new_tokens``; a batch that stops early counts whole), so even a stage of one batch
    shows an ETA.
    """
    from sga_core.model.forward import greedy_generate

    enc = as_encoder(encoder)
    limit = max_prompt_tokens or enc.max_length
    ids = [prompt_ids(enc, p, kind)[-limit:] for p in prompts]
    if not ids:
        return []
    per_row = max(1, int(max_new_tokens))
    stage, total, done = f"{stage} (tokens)", len(ids) * per_row, [0]

    def on_step(idx: list[int], n: int) -> None:
        report(progress, stage, done[0] + len(idx) * min(n, per_row), total)

    def on_batch(idx: list[int]) -> None:
        done[0] += len(idx) * per_row
        report(progress, stage, done[0], total)

    report(progress, stage, 0, total)
    new = greedy_generate(model, ids, enc.pad_id, enc.eos_id, max_new_tokens, device,
                          batch_size, on_batch, stop_strings=stop_strings,
                          decode=lambda t: enc.tok.decode(t, skip_special_tokens=True),
                          on_step=on_step if progress is not None else None)
    return [enc.tok.decode(n, skip_special_tokens=True).strip() for n in new]


def cut_at(text: str, stops: Sequence[str]) -> str:
    """The text before the first of ``stops`` (MUSE metrics/knowmem.py
    ``get_prefix_before_words_occur``: one split per stop string, in order)."""
    for word in stops:
        if word:
            text = text.split(word)[0]
    return text


def first_tokens(tok, text: str, n: int) -> str:
    """The first ``n`` tokens of ``text``, decoded: MUSE's VerbMem ground truth
    (metrics/verbmem.py: ``tokenizer(gt, add_special_tokens=True).input_ids[:, :n]``, decoded
    without special tokens; a BOS token counts as one of the ``n``)."""
    ids = tok(text, add_special_tokens=True)["input_ids"][:n]
    return tok.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=True)


def _hit_lists(res) -> list[list[bool]]:
    """Per sequence: for each scored token but the last, whether the argmax of the previous
    position's logits is that token (open-unlearning tokenwise_vocab_logprobs drops the
    last scored position, the EOS prediction). ``res``: the batch's
    :class:`~sga_core.model.labelhead.LabelOutput` (scored tokens in row-major order)."""
    import torch

    preds = [lg.argmax(dim=-1) for _, _, lg in res.chunks()]
    hits = (torch.cat(preds) == res.targets).cpu().tolist() if preds else []
    out: list[list[bool]] = [[] for _ in range(res.shape[0])]
    for r, h in zip(res.rows.cpu().tolist(), hits):
        out[r].append(h)
    return [row[:-1] for row in out]


def answer_token_hits(model, encoder, seqs: Sequence[TokSeq], device="cpu",
                      batch_size: int = 16, *, progress: Progress = None,
                      stage: str = "scoring answer tokens") -> list[list[bool]]:
    """:func:`_hit_lists` of each sequence (its labelled tokens are the answer), in input
    order; the input of exact memorization and extraction strength."""
    from sga_core.model.forward import per_sequence

    enc = as_encoder(encoder)
    return per_sequence(model, list(seqs), enc.pad_id, _hit_lists, device, batch_size,
                        on_batch=counter(progress, stage, len(seqs)))
