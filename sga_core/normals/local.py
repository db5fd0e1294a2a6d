"""The local backend: the prompt templates answered by a local instruct model, offline.

The default model is the embedded SmolLM2-135M-Instruct (``embedded:smollm2``). Prompts go
through the tokenizer's chat template (system + user message, then the assistant turn; a model
without a chat template gets the two messages as plain text), are batched with LEFT padding and
answered with ``generate``: sampling (temperature 0.8, top-p 0.95, ``max_new_tokens`` 64 by
default), K-1 sequences per prompt, a fixed seed, so a rerun with the same settings gives the
same answers. An answer that comes back empty is sampled again (a few rounds); a row still short
of K-1 answers is reported in ``errors``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from sga_core.data import NormalAnswer, NormalTable
from sga_core.model.loading import DEFAULT_MODEL
from sga_core.normals.registry import register_backend
from sga_core.normals.result import GenerationResult, Progress
from sga_core.normals.templates import Template, default_template, load_template, render
from sga_core.params import param

__all__ = ["clear_cache", "local_normals"]

_EMPTY_ROUNDS = 3  # extra sampling rounds for answers that came back empty
_CACHE: dict[tuple[str, str, str], tuple[Any, Any]] = {}
_LOCK = threading.Lock()


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()


def _load(model: str, dtype: str, device: str):
    """(model, tokenizer) with left padding; the last one loaded stays cached."""
    from sga_core.model.loading import load_model, load_tokenizer

    key = (model, dtype, device)
    with _LOCK:
        if key not in _CACHE:
            _CACHE.clear()  # keep one model in memory
            tok = load_tokenizer(model, padding_side="left")
            lm = load_model(model, dtype=dtype).to(device)
            lm.eval()
            _CACHE[key] = (lm, tok)
        return _CACHE[key]


def _prompt_text(tok, messages: list[dict[str, str]]) -> str:
    if getattr(tok, "chat_template", None):
        return tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return "\n\n".join(m["content"] for m in messages) + "\n\n"


def _generate(lm, tok, prompts: list[str], n: int, *, max_new_tokens: int, temperature: float,
              top_p: float, max_prompt_tokens: int, device: str) -> list[list[str]]:
    """``n`` sampled answers for each prompt (in one padded batch)."""
    import torch

    tok.padding_side = "left"
    tok.truncation_side = "left"
    enc = tok(prompts, return_tensors="pt", padding=True, truncation=True,
              max_length=max_prompt_tokens, add_special_tokens=False).to(device)
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    # temperature 0 is greedy decoding: one answer per prompt (generate neither samples at
    # temperature 0 nor returns several greedy sequences), repeated n times
    sampling = (dict(do_sample=True, temperature=temperature, top_p=top_p,
                     num_return_sequences=n) if temperature > 0
                else dict(do_sample=False, temperature=None, top_p=None))
    with torch.no_grad():
        out = lm.generate(**enc, **sampling, max_new_tokens=max_new_tokens, min_new_tokens=1,
                          pad_token_id=pad_id)
    new = out[:, enc["input_ids"].shape[1]:]
    texts = [t.strip() for t in tok.batch_decode(new, skip_special_tokens=True)]
    per = n if temperature > 0 else 1
    return [texts[i * per:(i + 1) * per] * (n // per) for i in range(len(prompts))]


def _run_batches(lm, tok, prompts: dict[int, str], order: list[int], need: int,
                 batch_size: int, opts: dict[str, Any], results: dict[int, list[str]],
                 errors: dict[int, str], done: int, total: int,
                 progress: Progress | None) -> int:
    """Generate for the rows in ``order``, batch by batch; returns the updated ``done``."""
    for b in range(0, len(order), batch_size):
        batch = order[b:b + batch_size]
        outs = _generate(lm, tok, [prompts[i] for i in batch], need, **opts)
        for i, texts in zip(batch, outs):
            results[i] = [t for t in texts if t]
        for _ in range(_EMPTY_ROUNDS):
            short = [i for i in batch if len(results[i]) < need]
            if not short:
                break
            more = _generate(lm, tok, [prompts[i] for i in short], need, **opts)
            for i, texts in zip(short, more):
                results[i] += [t for t in texts if t][: need - len(results[i])]
        for i in batch:
            if len(results[i]) < need:
                errors[i] = (f"the model gave only {len(results[i])} non-empty answers of "
                             f"{need}")
                del results[i]
        done += len(batch)
        if progress is not None:
            progress(done, total)
    return done


def local_normals(
    forget_rows: list[dict[str, Any]],
    kind: str,
    k: int,
    *,
    template: str | Template | None = None,
    model: str = DEFAULT_MODEL,
    max_new_tokens: int = 64,
    temperature: float = 0.8,
    top_p: float = 0.95,
    seed: int = 0,
    batch_size: int = 8,
    device: str | None = None,
    dtype: str = "float32",
    max_prompt_tokens: int = 1024,
    progress: Progress | None = None,
) -> GenerationResult:
    """K-1 sampled answers per forget row from a local chat model (``source="local"``).

    ``model`` is a model spec as in :func:`sga_core.models.load_model` (a folder, a cached hub
    id or ``embedded:smollm2``); ``batch_size`` counts forget rows per ``generate`` call (each
    row yields K-1 sequences). ``progress(done, total)`` counts forget rows.
    """
    import torch

    if kind not in ("qa", "text"):
        raise ValueError(f"kind must be 'qa' or 'text', not {kind!r}")
    if max_new_tokens < 1 or batch_size < 1:
        raise ValueError("max_new_tokens and batch_size must be >= 1")
    start = time.perf_counter()
    tmpl = load_template(template or default_template(kind, forget_rows))
    tmpl.check(kind)
    need, total = k - 1, len(forget_rows)
    errors: dict[int, str] = {}
    results: dict[int, list[str]] = {}
    if need > 0 and total:
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        lm, tok = _load(model, dtype, device)
        prompts: dict[int, str] = {}
        for i, row in enumerate(forget_rows):
            try:
                prompts[i] = _prompt_text(tok, render(tmpl, row, kind))
            except Exception as exc:  # a row the template cannot render
                errors[i] = f"template: {exc}"
        opts = dict(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                    max_prompt_tokens=max_prompt_tokens, device=device)
        order = sorted(prompts)
        done = len(errors)
        if progress is not None:
            progress(done, total)
        cuda = [torch.device(device).index or 0] if device.startswith("cuda") else []
        with torch.random.fork_rng(devices=cuda):  # seeded without touching the global RNG
            torch.manual_seed(seed)
            _run_batches(lm, tok, prompts, order, need, batch_size, opts, results, errors,
                         done, total, progress)
    elif progress is not None:
        progress(total, total)
    answers = [NormalAnswer(forget_index=i, k=slot, text=text, source="local")
               for i in sorted(results) for slot, text in enumerate(results[i][:need], start=1)]
    return GenerationResult("local", NormalTable(answers, k), total, errors=errors,
                            elapsed_s=time.perf_counter() - start)


# ------------------------------------------------------------------ registration ------------
@dataclass
class LocalConfig:
    """Settings of the local backend."""

    template: str | None = param(None, "Prompt template: a name in assets/prompts or a YAML "
                                       "path (empty = by data kind).",
                                 label="prompt template (assets/prompts/, editable)")
    model: str = param(DEFAULT_MODEL, "Local model spec: a folder, a cached hub id or "
                                      "embedded:smollm2.", label="local model")
    max_new_tokens: int = param(64, "Tokens generated per answer.", min=1,
                                label="max new tokens")
    temperature: float = param(0.8, "Sampling temperature (0 = greedy).", min=0.0,
                                advanced=True)
    top_p: float = param(0.95, "Nucleus sampling.", min=0.0, max=1.0, advanced=True)
    batch_size: int = param(8, "Forget rows per generate call.", min=1, advanced=True)
    device: str | None = param(None, "Device (empty = cuda if available, else cpu).",
                               advanced=True)
    dtype: str = param("float32", "Weights' dtype.", advanced=True)
    max_prompt_tokens: int = param(1024, "Prompt tokens kept at most.", min=1, advanced=True)


@register_backend("local", LocalConfig, rank=1, loads_model=True,
                  description="a local instruct model (default: the embedded SmolLM2), with "
                              "a prompt template")
def generate(forget_rows: list[dict[str, Any]], kind: str, k: int,
             **options: Any) -> GenerationResult:
    """K-1 sampled answers per forget row from a local instruct model; see
    :func:`local_normals`."""
    return local_normals(forget_rows, kind, k, **options)
