"""Evaluating runs and models (SPEC 4): TOFU-style QA metrics and MUSE-style text metrics.

Entry points:

- :func:`evaluate_run` evaluates a run folder (its ``model/``, its data snapshot, its
  ``eval`` settings) into ``RUN_DIR/eval/summary.json`` + ``eval/per_sample.jsonl``, and
  keeps ``eval/status.json`` (state running / completed / failed, the stage and its
  progress, the error) current, so a UI can show it;
- :func:`evaluate_model` evaluates a bare model (a folder, a hub id, ``embedded:smollm2``) on
  given data into any folder;
- :func:`evaluate_qa` / :func:`evaluate_text` do the work on a loaded model and return
  ``(summary, per_sample)``.

The metric functions and the model-side scoring / generation helpers live in
:mod:`sga_core.metrics`; this module only picks the rows, batches them well, and writes files.

QA (TOFU): forget / retain / real-world sets each get probability (normalised on the real-world
sets), the truth-ratio score (forget: ``mean(min(TR, 1/TR))``, others ``mean(max(0, 1-TR))``)
and the ROUGE-L recall of greedy answers; Model Utility is the harmonic mean of the 9
retain / real_authors / world_facts numbers; Forget Quality is the KS-test p-value of the
forget truth ratios against those of the retain reference. At most ``eval.max_retain_rows``
retain rows are evaluated (an evenly spaced, deterministic subset: TOFU likewise evaluates a
400-row retain subset, not its 3,600 retain rows).

Text (MUSE): VerbMem (ROUGE-L F1 of 128-token greedy continuations of forget prompts),
KnowMem on the ``forget_qa`` / ``retain_qa`` sets, the Min-K% (k = 0.4) AUC separating forget
from ``holdout`` texts, PrivLeak against the reference model's AUC, and perplexities.

The retain reference's values (forget truth ratios, or the Min-K% AUC) are computed once per
reference and data: taken from the reference run's own ``eval/summary.json`` when it was
computed on the same rows with the same settings, else from
``<reference>/eval/reference_cache.json`` (keyed by a hash of the rows and settings), else
computed now with the reference model and written to that cache.

Anything that cannot be computed is reported as ``{"value": None, "reason": ...}``, never as a
crash or a made-up number. torch is only imported when a model is run.
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sga_core.evaluation.inputs import (
    generate_answers,
    score_qa_candidates,
    split_scores,
    text_token_logprobs,
)
from sga_core.fileio import atomic_write_json, atomic_write_jsonl, now_iso, read_json
from sga_core.metrics import (
    MetricResult,
    auc,
    forget_quality,
    knowmem,
    min_k_percent_score,
    model_utility,
    normalized_probability,
    perplexity_from_logprobs,
    privleak,
    probability,
    rouge_l_recall,
    truth_ratio,
    truth_ratio_forget_score,
    truth_ratio_retain_score,
    verbmem,
)
from sga_core.metrics.result import missing

SUMMARY_FILE = "summary.json"
PER_SAMPLE_FILE = "per_sample.jsonl"
TOKENS_FILE = "tokens.jsonl"
REFERENCE_CACHE_FILE = "reference_cache.json"
EVAL_DIR = "eval"
EVAL_LOG = "eval.log"
VERBMEM_NEW_TOKENS = 128  # MUSE
MIN_K = 0.4  # MUSE / open-unlearning Min-K%
TEXT_PROMPT_WORDS = 15  # text rows without a prompt: split after this many words (the demo's)
TEXT_SETS = ("holdout", "forget_qa", "retain_qa")
SUMMARY_VERSION = 1

QA_SAMPLE_KEYS = ("set", "index", "question", "answer", "generated", "nll_answer",
                  "nll_paraphrased", "nll_perturbed", "truth_ratio", "rouge_l_recall",
                  "probability")
TEXT_SAMPLE_KEYS = ("set", "index", "prompt", "reference", "generated", "rouge_l_f1",
                    "min_k_score", "perplexity")

Progress = Callable[[str, int, int], None] | None


class EvalError(ValueError):
    """An evaluation that cannot start (no model, no data); the message says what is missing."""


# ------------------------------------------------------------------------------------------
# small helpers


def _report(progress: Progress, stage: str, done: int, total: int) -> None:
    if progress is not None:
        progress(stage, done, total)


def retain_subset(n_rows: int, max_rows: int) -> list[int]:
    """Indices of an evenly spaced, deterministic subset of ``max_rows`` of ``n_rows`` rows
    (all rows when ``max_rows`` is 0 or not smaller)."""
    if not max_rows or max_rows >= n_rows:
        return list(range(n_rows))
    return [i * n_rows // max_rows for i in range(max_rows)]


def _finite(x: Any) -> Any:
    """Non-finite floats -> None, recursively (summary files are strict JSON)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def metric_entry(result: MetricResult, keep_per_sample: bool = False) -> dict:
    """A summary entry ``{"name", "value", "reason"}`` (from :meth:`MetricResult.to_dict`);
    a non-finite value becomes None with a reason."""
    d = result.to_dict()
    if not keep_per_sample:
        d.pop("per_sample", None)
    v = d.get("value")
    if v is not None and not math.isfinite(float(v)):
        d["value"] = None
        d["reason"] = f"not a finite number ({v})"
    elif v is not None:
        d["value"] = float(v)
    return _finite(d)


def choose_device(device: str | None = "auto") -> str:
    if device and device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_model_and_tokenizer(spec: str, dtype: str = "float32", device: str = "cpu"):
    """Load a model for evaluation (eval mode, KV cache on for generation) and its tokenizer."""
    from sga_core.model.loading import load_model, load_tokenizer

    tok = load_tokenizer(spec)
    model = load_model(spec, dtype=dtype).to(device).eval()
    # a trained run's saved config has use_cache=False (training); generation wants the cache
    model.config.use_cache = True
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.use_cache = True
    return model, tok


def _free() -> None:
    """Give memory back after a model was dropped (the caller deletes its references)."""
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # pragma: no cover - cleanup only
        pass


def _rows_key(kind: str, payload: Any, settings: Mapping) -> str:
    """A short hash of the rows and the settings that change the reference's values."""
    blob = json.dumps({"kind": kind, "rows": payload, "settings": dict(settings)},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:24]


def forget_rows_key(rows: Sequence[dict], max_length: int, system_prompt: str | None) -> str:
    """Key of forget truth ratios: the rows' question and candidate answers + encoding."""
    payload = [[r.get("question"), r.get("answer"), r.get("paraphrased_answer"),
                list(r.get("perturbed_answer") or [])] for r in rows]
    return _rows_key("forget_truth_ratios", payload,
                     {"max_length": max_length, "system_prompt": system_prompt})


def mia_key(forget_texts: Sequence[str], holdout_texts: Sequence[str], max_length: int) -> str:
    """Key of a Min-K% AUC: the forget and holdout texts + max_length and k."""
    return _rows_key("mia_auc", [list(forget_texts), list(holdout_texts)],
                     {"max_length": max_length, "k": MIN_K})


# ------------------------------------------------------------------------------------------
# batching through the library scoring / generation helpers


def qa_candidates(row: dict) -> list[str]:
    out = [row["answer"]]
    para = row.get("paraphrased_answer")
    if isinstance(para, str) and para.strip():
        out.append(para)
    return out + list(row.get("perturbed_answer") or [])


def qa_batches(enc, rows: Sequence[dict], batch_size: int) -> list[list[int]]:
    """Groups of row indices, each scored as ONE padded batch of all its rows' candidates
    (answer, paraphrase, perturbed answers): rows sorted by their longest candidate, packed
    up to ``batch_size`` sequences (one row at least), so little of each batch is padding."""
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


def score_qa(model, enc, rows: Sequence[dict], batch_size: int = 16, device="cpu",
             progress: Progress = None, stage: str = "scoring answers") -> list[dict]:
    """:func:`~sga_core.metrics.score_qa_candidates` for every row, batched by
    :func:`qa_batches`; returns the candidate NLLs in input order."""
    rows = list(rows)
    out: list[dict | None] = [None] * len(rows)
    groups = qa_batches(enc, rows, batch_size)
    done = 0
    _report(progress, stage, 0, len(rows))
    for g in groups:
        res = score_qa_candidates(model, enc, [rows[i] for i in g], device=device,
                                  rows_per_batch=len(g))
        for i, r in zip(g, res):
            out[i] = r
        done += len(g)
        _report(progress, stage, done, len(rows))
    return out  # type: ignore[return-value]


def generate(model, enc, prompts: Sequence[str], max_new_tokens: int, kind: str = "qa",
             batch_size: int = 16, device="cpu", progress: Progress = None,
             stage: str = "generating") -> list[str]:
    """:func:`~sga_core.metrics.generate_answers` over prompts sorted by length, one batch
    per call (for progress reports); returns the generations in input order."""
    prompts = list(prompts)
    if not prompts:
        return []

    def n_tokens(p: str) -> int:
        if kind == "qa":
            return len(enc.prompt_ids(p))
        return len(enc.tok(p, add_special_tokens=False)["input_ids"])

    order = sorted(range(len(prompts)), key=lambda i: n_tokens(prompts[i]))
    out = [""] * len(prompts)
    step = max(1, int(batch_size))
    _report(progress, stage, 0, len(prompts))
    for s in range(0, len(order), step):
        idx = order[s:s + step]
        gen = generate_answers(model, enc, [prompts[i] for i in idx],
                               max_new_tokens=max_new_tokens, kind=kind, device=device,
                               batch_size=step)
        for i, g in zip(idx, gen):
            out[i] = g
        _report(progress, stage, min(s + step, len(order)), len(prompts))
    return out


# ------------------------------------------------------------------------------------------
# QA (TOFU)


def _is_qa_rows(rows) -> bool:
    return bool(rows) and all(isinstance(r, dict) and "question" in r and "answer" in r
                              for r in rows)


def evaluate_qa(model, enc, forget_rows: Sequence[dict], retain_rows: Sequence[dict] | None,
                sets: Mapping[str, Sequence[dict]] | None,
                reference_tr: Sequence[float | None] | None,
                max_new_tokens: int = 48, batch_size: int = 16, progress: Progress = None,
                *, max_retain_rows: int = 0, device="cpu",
                reference_reason: str | None = None,
                self_reference: bool = False) -> tuple[dict, list[dict]]:
    """TOFU-style metrics of a loaded model on QA rows.

    ``sets`` are the extra (real-world) QA sets, name -> rows; Model Utility uses
    ``real_authors`` and ``world_facts``. ``reference_tr`` are the retain reference's forget
    truth ratios (None: Forget Quality is None, with ``reference_reason`` if given);
    ``self_reference``: this model IS the retain reference, so its own truth ratios are the
    reference (its Forget Quality is then 1, the KS p-value of identical samples).
    Returns ``(summary, per_sample)``: ``summary["metrics"]`` maps ``<set>_probability``,
    ``<set>_truth_ratio``, ``<set>_rouge``, ``model_utility`` and ``forget_quality`` to
    ``{"name", "value", "reason"}``; ``summary["forget_truth_ratios"]`` is the raw per-row
    list (the values a later run compares against when this model is its reference).
    """
    t0 = time.time()
    forget_rows = list(forget_rows or [])
    retain_all = list(retain_rows or [])
    keep = retain_subset(len(retain_all), max_retain_rows)
    groups: list[tuple[str, list[int], list[dict]]] = [
        ("forget", list(range(len(forget_rows))), forget_rows),
        ("retain", keep, [retain_all[i] for i in keep]),
    ]
    for name, rows in (sets or {}).items():
        if name in ("forget", "retain"):
            raise EvalError(f"eval set name {name!r} is reserved")
        rows = list(rows or [])
        if rows and not _is_qa_rows(rows):
            raise EvalError(f"eval set {name!r} is not QA data (question + answer rows)")
        groups.append((name, list(range(len(rows))), rows))

    flat = [row for _, _, rows in groups for row in rows]
    timings: dict[str, float] = {}
    ts = time.time()
    scores = score_qa(model, enc, flat, batch_size, device, progress, "scoring answers")
    timings["scoring_s"] = round(time.time() - ts, 3)
    ts = time.time()
    generated = generate(model, enc, [r["question"] for r in flat], max_new_tokens, "qa",
                         batch_size, device, progress, "generating answers")
    timings["generation_s"] = round(time.time() - ts, 3)

    metrics: dict[str, MetricResult] = {}
    per_sample: list[dict] = []
    forget_tr: list[float | None] = []
    pos = 0
    for name, indices, rows in groups:
        n = len(rows)
        sc, gen = scores[pos:pos + n], generated[pos:pos + n]
        pos += n
        if not rows:
            why = ("no retain rows (data.retain)" if name == "retain" else
                   "no forget rows" if name == "forget" else f"eval set {name!r} is empty")
            for m in ("probability", "truth_ratio", "rouge"):
                metrics[f"{name}_{m}"] = missing(f"{name}_{m}", why)
            continue
        ans, denom, pert = split_scores(sc)
        if name in ("forget", "retain"):
            prob = probability(ans, name=f"{name}_probability")
        else:
            prob = normalized_probability(ans, pert, name=f"{name}_probability")
        tr = truth_ratio(pert, denom, name=f"{name}_truth_ratio_raw")
        if name == "forget":
            tr_score = truth_ratio_forget_score(tr, name="forget_truth_ratio")
            forget_tr = list(tr.per_sample)
        else:
            tr_score = truth_ratio_retain_score(tr, name=f"{name}_truth_ratio")
        if tr.value is None:  # keep the precise reason (no perturbed answers, ...)
            tr_score = missing(tr_score.name, tr.reason or "no truth ratios")
        rouge = rouge_l_recall(gen, [r["answer"] for r in rows], name=f"{name}_rouge")
        metrics[prob.name], metrics[tr_score.name], metrics[rouge.name] = prob, tr_score, rouge
        for j, (idx, row) in enumerate(zip(indices, rows)):
            per_sample.append({
                "set": name, "index": idx, "question": row["question"],
                "answer": row["answer"], "generated": gen[j],
                "nll_answer": sc[j]["answer"], "nll_paraphrased": sc[j]["paraphrased"],
                "nll_perturbed": list(sc[j]["perturbed"]),
                "truth_ratio": tr.per_sample[j], "rouge_l_recall": rouge.per_sample[j],
                "probability": prob.per_sample[j] if prob.per_sample else None,
            })

    mu = model_utility(metrics)
    if self_reference:
        reference_tr = list(forget_tr)
    if reference_tr is None:
        fq = missing("forget_quality",
                     reference_reason or "no retain-reference truth ratios")
    else:
        fq = forget_quality(forget_tr, reference_tr)
    summary_metrics = {k: metric_entry(v) for k, v in metrics.items()}
    summary_metrics["model_utility"] = metric_entry(mu, keep_per_sample=True)
    summary_metrics["forget_quality"] = metric_entry(fq, keep_per_sample=True)
    timings["qa_total_s"] = round(time.time() - t0, 3)
    summary = {
        "task": "qa",
        "metrics": _finite(summary_metrics),
        "forget_truth_ratios": _finite([float(t) if t is not None else None
                                        for t in forget_tr]),
        "rows": {name: len(rows) for name, _, rows in groups},
        "retain_rows_total": len(retain_all),
        "retain_indices": keep if len(keep) < len(retain_all) else None,
        "timings": timings,
    }
    return summary, _finite(per_sample)


# ------------------------------------------------------------------------------------------
# Text (MUSE)


def full_text(row: dict | str) -> str:
    """The whole passage of a text row (``text``, else prompt + continuation)."""
    if isinstance(row, str):
        return row
    if isinstance(row.get("text"), str) and row["text"].strip():
        return row["text"]
    prompt = row.get("prompt") or ""
    cont = row.get("continuation") or row.get("gt") or ""
    sep = " " if prompt and not prompt.endswith((" ", "\n")) else ""
    return prompt + sep + cont


def prompt_and_continuation(row: dict) -> tuple[str, str]:
    """A forget row's VerbMem prefix and true continuation; a row without a prompt is split
    after its first 15 words (the demo's split), or in the middle when it is shorter."""
    prompt = row.get("prompt") or ""
    cont = row.get("continuation") or row.get("gt") or ""
    if prompt.strip():
        return prompt, cont
    words = full_text(row).split()
    cut = min(TEXT_PROMPT_WORDS, max(1, len(words) // 2))
    return " ".join(words[:cut]), " ".join(words[cut:])


def evaluate_text(model, enc, forget_rows: Sequence[dict], retain_rows: Sequence[dict] | None,
                  sets: Mapping[str, Sequence[dict]] | None, reference_auc: float | None,
                  max_new_tokens: int = 48, batch_size: int = 16, progress: Progress = None,
                  *, max_retain_rows: int = 0, device="cpu",
                  reference_reason: str | None = None,
                  verbmem_new_tokens: int = VERBMEM_NEW_TOKENS,
                  self_reference: bool = False) -> tuple[dict, list[dict]]:
    """MUSE-style metrics of a loaded model on text rows.

    ``sets``: ``holdout`` (text, never trained on: Min-K% AUC, PrivLeak, perplexity),
    ``forget_qa`` / ``retain_qa`` (QA about the forget / retain documents: KnowMem); other
    QA sets get ``<name>_knowmem``, other text sets ``<name>_perplexity``.
    ``reference_auc`` is the retain reference's Min-K% AUC on the same forget / holdout texts
    (``self_reference``: this model is the reference, its own AUC is used: PrivLeak 0).
    Metrics: ``forget_verbmem``, ``forget_knowmem``, ``retain_knowmem``, ``mia_auc``,
    ``privleak``, ``holdout_perplexity``, ``forget_perplexity``, ``retain_perplexity``.
    """
    t0 = time.time()
    timings: dict[str, float] = {}
    forget_rows = list(forget_rows or [])
    retain_all = list(retain_rows or [])
    keep = retain_subset(len(retain_all), max_retain_rows)
    retain_sub = [retain_all[i] for i in keep]
    sets = {k: list(v or []) for k, v in (sets or {}).items()}
    holdout = sets.get("holdout") or []
    if holdout and _is_qa_rows(holdout):
        raise EvalError("eval set 'holdout' must be text rows")
    metrics: dict[str, MetricResult] = {}
    samples: dict[tuple[str, int], dict] = {}

    def sample(set_name: str, index: int) -> dict:
        key = (set_name, index)
        if key not in samples:
            samples[key] = {k: None for k in TEXT_SAMPLE_KEYS} | {"set": set_name,
                                                                    "index": index}
        return samples[key]

    # VerbMem: greedy continuations of the forget prefixes
    ts = time.time()
    if forget_rows:
        pcs = [prompt_and_continuation(r) for r in forget_rows]
        gens = generate(model, enc, [p for p, _ in pcs], verbmem_new_tokens, "text",
                        batch_size, device, progress, "verbatim continuations")
        vm = verbmem(gens, [c for _, c in pcs], name="forget_verbmem")
        for i, ((p, c), g) in enumerate(zip(pcs, gens)):
            s = sample("forget", i)
            s.update(prompt=p, reference=c, generated=g, rouge_l_f1=vm.per_sample[i])
    else:
        vm = missing("forget_verbmem", "no forget rows")
    metrics["forget_verbmem"] = vm
    timings["verbmem_s"] = round(time.time() - ts, 3)

    # KnowMem (and any other QA set)
    ts = time.time()
    qa_sets = [(n, rows) for n, rows in sets.items() if n != "holdout" and _is_qa_rows(rows)]
    for name in ("forget_qa", "retain_qa"):
        if not sets.get(name):
            metric = name.replace("_qa", "_knowmem")
            metrics[metric] = missing(metric, f"no {name} set (eval.sets.{name})")
    for name, rows in qa_sets:
        metric = name.replace("_qa", "_knowmem") if name in ("forget_qa", "retain_qa") \
            else f"{name}_knowmem"
        gens = generate(model, enc, [r["question"] for r in rows], max_new_tokens, "qa",
                        batch_size, device, progress, f"answering {name}")
        km = knowmem(gens, [r["answer"] for r in rows], name=metric)
        metrics[metric] = km
        for i, (row, g) in enumerate(zip(rows, gens)):
            sample(name, i).update(prompt=row["question"], reference=row["answer"],
                                   generated=g, rouge_l_f1=km.per_sample[i])
    timings["knowmem_s"] = round(time.time() - ts, 3)

    # token log-probs: Min-K% (forget vs holdout), perplexities
    ts = time.time()
    other_text = [(n, rows) for n, rows in sets.items()
                  if n != "holdout" and rows and not _is_qa_rows(rows)]
    blocks = [("forget", forget_rows), ("holdout", holdout), ("retain", retain_sub)]
    blocks += other_text
    texts = [full_text(r) for _, rows in blocks for r in rows]
    _report(progress, "scoring texts", 0, len(texts))
    lps = text_token_logprobs(model, enc, texts, device=device, batch_size=batch_size) \
        if texts else []
    _report(progress, "scoring texts", len(texts), len(texts))
    pos = 0
    by_block: dict[str, list[list[float]]] = {}
    for name, rows in blocks:
        by_block[name] = lps[pos:pos + len(rows)]
        pos += len(rows)
    mink: dict[str, MetricResult] = {}
    for name, rows in blocks:
        if not rows:
            metrics[f"{name}_perplexity"] = missing(
                f"{name}_perplexity",
                {"forget": "no forget rows", "holdout": "no holdout set (eval.sets.holdout)",
                 "retain": "no retain rows (data.retain)"}.get(name, f"{name} is empty"))
            continue
        ppl = perplexity_from_logprobs(by_block[name], name=f"{name}_perplexity")
        metrics[ppl.name] = ppl
        if name in ("forget", "holdout"):
            mink[name] = min_k_percent_score(by_block[name], MIN_K, name=f"{name}_min_k")
        for i, row in enumerate(rows):
            index = keep[i] if name == "retain" else i
            s = sample(name, index)
            if s["prompt"] is None and s["reference"] is None:
                s["reference"] = full_text(row)
            s["perplexity"] = ppl.per_sample[i]
            if name in mink:
                s["min_k_score"] = mink[name].per_sample[i]
    if not forget_rows:
        metrics["mia_auc"] = missing("mia_auc", "no forget rows")
    elif not holdout:
        metrics["mia_auc"] = missing("mia_auc", "no holdout set (eval.sets.holdout)")
    else:
        metrics["mia_auc"] = auc(mink["forget"], mink["holdout"], name="mia_auc")
    timings["logprobs_s"] = round(time.time() - ts, 3)

    if self_reference and metrics["mia_auc"].value is not None:
        reference_auc = metrics["mia_auc"].value
    if metrics["mia_auc"].value is None:
        metrics["privleak"] = missing("privleak", metrics["mia_auc"].reason or "no AUC")
    elif reference_auc is None:
        metrics["privleak"] = missing("privleak", reference_reason or "no retain-reference AUC")
    else:
        metrics["privleak"] = privleak(metrics["mia_auc"], reference_auc)

    order = ["forget_verbmem", "forget_knowmem", "retain_knowmem", "mia_auc", "privleak",
             "holdout_perplexity", "forget_perplexity", "retain_perplexity"]
    names = order + [k for k in metrics if k not in order]
    timings["text_total_s"] = round(time.time() - t0, 3)
    summary = {
        "task": "text",
        "metrics": {k: metric_entry(metrics[k]) for k in names if k in metrics},
        "rows": {"forget": len(forget_rows), "retain": len(retain_sub),
                 **{n: len(r) for n, r in sets.items()}},
        "retain_rows_total": len(retain_all),
        "retain_indices": keep if len(keep) < len(retain_all) else None,
        "timings": timings,
    }
    return summary, _finite(list(samples.values()))


# ------------------------------------------------------------------------------------------
# the retain reference


@dataclass
class Reference:
    """Where a retain reference's model, own summary and value cache are."""

    given: str
    model: str | None = None  # a spec load_model understands
    cache_dir: Path | None = None
    summary_path: Path | None = None
    problem: str | None = None  # why it cannot be used

    @property
    def cache_path(self) -> Path | None:
        return self.cache_dir / REFERENCE_CACHE_FILE if self.cache_dir else None


def _is_run_dir(path: Path) -> bool:
    from sga_core.runs.status import RUN_FILE

    return (path / "config.yaml").exists() or (path / RUN_FILE).exists()


def is_same_model(ref: Reference | None, model: str) -> bool:
    """Whether the evaluated model is the reference itself (the retain reference's own run)."""
    if ref is None or ref.model is None:
        return False
    a, b = Path(ref.model).expanduser(), Path(model).expanduser()
    if a.is_dir() and b.is_dir():
        return a.resolve() == b.resolve()
    return ref.model == model


def self_reference_info(ref: Reference) -> dict:
    return {"value": None, "source": "self (this model is the retain reference)",
            "reason": None, "path": ref.given, "model": ref.model}


def resolve_reference(ref: str | os.PathLike | None) -> Reference | None:
    """Interpret ``eval.reference``: a run folder (uses its ``model/``), a model folder inside
    a run folder, a bare model folder, or a model id / ``embedded:...`` spec."""
    if ref is None or not str(ref).strip():
        return None
    given = str(ref).strip()
    from sga_core.model.loading import cache_dir, is_embedded

    path = Path(given).expanduser()
    if path.is_dir():
        path = path.resolve()
        if (path / "model" / "config.json").exists():
            return Reference(given, str(path / "model"), path / EVAL_DIR,
                             path / EVAL_DIR / SUMMARY_FILE)
        if (path / "config.json").exists():
            if _is_run_dir(path.parent):
                return Reference(given, str(path), path.parent / EVAL_DIR,
                                 path.parent / EVAL_DIR / SUMMARY_FILE)
            return Reference(given, str(path), path / EVAL_DIR, None)
        if _is_run_dir(path):
            from sga_core.runs.status import effective_run

            st = effective_run(path)
            return Reference(given, problem=f"the reference run {path.name} has no model yet "
                                            f"(state: {st.get('state', 'unknown')})")
        return Reference(given, problem=f"the reference {given} holds no model (config.json)")
    if is_embedded(given) or not given.startswith(("/", ".", "~")) and not path.exists():
        slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in given)[:100]
        return Reference(given, given, cache_dir() / "reference_cache" / slug, None)
    return Reference(given, problem=f"the reference {given} does not exist")


def _cached_value(ref: Reference, kind: str, key: str) -> tuple[Any, str | None]:
    """A reference value from its own summary, or from its cache file; (value, source)."""
    if ref.summary_path is not None and ref.summary_path.exists():
        try:
            summ = read_json(ref.summary_path, default={}) or {}
        except (OSError, ValueError):
            summ = {}
        if (summ.get("cache_keys") or {}).get(kind) == key:
            if kind == "forget_truth_ratios" and summ.get("forget_truth_ratios"):
                return summ["forget_truth_ratios"], "reference summary"
            if kind == "mia_auc":
                v = ((summ.get("metrics") or {}).get("mia_auc") or {}).get("value")
                if v is not None:
                    return v, "reference summary"
    path = ref.cache_path
    if path is not None and path.exists():
        try:
            entry = ((read_json(path, default={}) or {}).get("entries") or {}).get(key)
        except (OSError, ValueError):
            entry = None
        if entry and entry.get("kind") == kind and entry.get("value") is not None:
            return entry["value"], "reference cache"
    return None, None


def _store_cache(ref: Reference, kind: str, key: str, value: Any, n_rows: int | None) -> None:
    path = ref.cache_path
    if path is None:
        return
    try:
        data = read_json(path, default={}) or {}
    except (OSError, ValueError):
        data = {}
    entries = data.get("entries") or {}
    entries[key] = {"kind": kind, "value": _finite(value), "rows": n_rows,
                    "model": ref.model, "computed_at": now_iso()}
    try:
        atomic_write_json(path, {"version": SUMMARY_VERSION, "entries": entries})
    except OSError:  # a read-only reference folder: the value is simply not cached
        pass


def reference_value(ref: Reference | None, kind: str, key: str,
                    compute: Callable[[Any, Any], Any], *, dtype: str = "float32",
                    device: str = "cpu", progress: Progress = None) -> dict:
    """The reference's value for ``kind`` ('forget_truth_ratios' or 'mia_auc'), cached once
    per reference and data. Returns ``{"value", "source", "reason", "path", "model"}``;
    ``compute(model, tokenizer)`` runs only when neither the reference's own summary nor its
    cache has the value for ``key``."""
    info: dict[str, Any] = {"value": None, "source": None, "reason": None,
                            "path": ref.given if ref else None,
                            "model": ref.model if ref else None}
    if ref is None:
        info["reason"] = "no retain reference configured (eval.reference)"
        return info
    if ref.problem:
        info["reason"] = ref.problem
        return info
    value, source = _cached_value(ref, kind, key)
    if value is not None:
        info.update(value=value, source=source)
        return info
    _report(progress, "loading the reference model", 0, 1)
    try:
        model, tok = load_model_and_tokenizer(ref.model, dtype=dtype, device=device)
    except Exception as exc:  # noqa: BLE001 - reported as the metric's reason
        info["reason"] = f"cannot load the reference model: {exc}"
        return info
    try:
        value = compute(model, tok)
    finally:
        del model
        _free()
    if value is None:
        info["reason"] = "the reference model's value could not be computed"
        return info
    _store_cache(ref, kind, key, value, len(value) if isinstance(value, list) else None)
    info.update(value=_finite(value), source="computed")
    return info


# ------------------------------------------------------------------------------------------
# evaluating a model / a run into a folder


def _load_rows(src, kind: str = "auto") -> tuple[list[dict], str | None, str]:
    """Rows from a file path or a list; returns (rows, path or None, kind)."""
    from sga_core.data import load_dataset

    if src is None:
        return [], None, kind
    if isinstance(src, (str, os.PathLike)):
        ds = load_dataset(src, kind=kind)
        return ds.rows, str(src), ds.kind
    rows = list(src)
    if kind == "auto":
        kind = "qa" if _is_qa_rows(rows) else "text"
    return rows, None, kind


@dataclass
class EvalSettings:
    max_new_tokens: int = 48
    max_retain_rows: int = 40
    batch_size: int = 16
    max_length: int = 256
    system_prompt: str | None = None
    dtype: str = "float32"
    device: str = "auto"


def evaluate_model(model: str, out_dir: str | os.PathLike, forget, retain=None,
                   sets: Mapping[str, Any] | None = None, reference: str | None = None, *,
                   task: str = "auto", settings: EvalSettings | None = None,
                   progress: Progress = None, run_id: str | None = None,
                   meta: dict | None = None) -> dict:
    """Evaluate a model spec (folder, hub id, ``embedded:...``) into ``out_dir``.

    ``forget`` / ``retain`` / each of ``sets`` is a data file or a list of rows; ``task`` is
    'qa', 'text' or 'auto' (from the forget data). Writes ``out_dir/per_sample.jsonl`` and
    then ``out_dir/summary.json`` (atomically) and returns the summary.
    """
    from sga_core.evaluation.inputs import split_scores as _split
    from sga_core.model.encoding import Encoder

    st = settings or EvalSettings()
    t0 = time.time()
    started = now_iso()
    forget_rows, forget_path, kind = _load_rows(forget, task)
    if not forget_rows:
        raise EvalError("no forget rows to evaluate")
    if kind not in ("qa", "text"):
        raise EvalError(f"task must be 'qa' or 'text', got {kind!r}")
    retain_rows, retain_path, _ = _load_rows(retain, kind)
    set_rows: dict[str, list[dict]] = {}
    set_paths: dict[str, str | None] = {}
    for name, src in (sets or {}).items():
        set_rows[name], set_paths[name], _ = _load_rows(src, "auto")
    device = choose_device(st.device)
    timings: dict[str, float] = {}

    # the reference's value first (the reference model, if it must be loaded, is freed
    # before the evaluated model is loaded)
    ts = time.time()
    ref = resolve_reference(reference)
    self_ref = is_same_model(ref, model)
    if kind == "qa":
        key = forget_rows_key(forget_rows, st.max_length, st.system_prompt)

        def compute(m, tok):
            enc = Encoder(tok, max_length=st.max_length, system_prompt=st.system_prompt)
            sc = score_qa(m, enc, forget_rows, st.batch_size, device, progress,
                          "reference: scoring forget answers")
            _, denom, pert = _split(sc)
            return truth_ratio(pert, denom).per_sample

        ref_info = (self_reference_info(ref) if self_ref else
                    reference_value(ref, "forget_truth_ratios", key, compute, dtype=st.dtype,
                                    device=device, progress=progress))
    else:
        holdout = set_rows.get("holdout") or []
        key = mia_key([full_text(r) for r in forget_rows], [full_text(r) for r in holdout],
                      st.max_length)

        def compute(m, tok):
            enc = Encoder(tok, max_length=st.max_length, system_prompt=st.system_prompt)
            lps = text_token_logprobs(m, enc, [full_text(r) for r in forget_rows + holdout],
                                      device=device, batch_size=st.batch_size)
            f = min_k_percent_score(lps[:len(forget_rows)], MIN_K)
            h = min_k_percent_score(lps[len(forget_rows):], MIN_K)
            return auc(f, h).value

        if self_ref:
            ref_info = self_reference_info(ref)
        elif not holdout:
            ref_info = {"value": None, "source": None, "path": reference,
                        "model": ref.model if ref else None,
                        "reason": "no holdout set (eval.sets.holdout)"}
        else:
            ref_info = reference_value(ref, "mia_auc", key, compute, dtype=st.dtype,
                                       device=device, progress=progress)
    timings["reference_s"] = round(time.time() - ts, 3)

    ts = time.time()
    _report(progress, "loading the model", 0, 1)
    m, tok = load_model_and_tokenizer(model, dtype=st.dtype, device=device)
    enc = Encoder(tok, max_length=st.max_length, system_prompt=st.system_prompt)
    timings["load_s"] = round(time.time() - ts, 3)
    try:
        if kind == "qa":
            summary, per_sample = evaluate_qa(
                m, enc, forget_rows, retain_rows, set_rows, ref_info["value"],
                st.max_new_tokens, st.batch_size, progress, max_retain_rows=st.max_retain_rows,
                device=device, reference_reason=ref_info["reason"], self_reference=self_ref)
            # per-token probabilities of the forget answers (the Token probabilities page)
            from sga_core.model.forward import row_token_table

            ts_tok = time.time()
            tokens = row_token_table(m, enc, forget_rows, "qa", "forget", device)
            summary.setdefault("timings", {})["tokens_s"] = round(time.time() - ts_tok, 3)
        else:
            tokens = None
            summary, per_sample = evaluate_text(
                m, enc, forget_rows, retain_rows, set_rows, ref_info["value"],
                st.max_new_tokens, st.batch_size, progress, max_retain_rows=st.max_retain_rows,
                device=device, reference_reason=ref_info["reason"], self_reference=self_ref)
    finally:
        del m
        _free()
    timings.update(summary.pop("timings", {}))

    from sga_core.model.loading import resolve_model_path

    try:
        model_path = resolve_model_path(model)
    except Exception:  # noqa: BLE001 - metadata only
        model_path = model
    ref_meta = {k: ref_info.get(k) for k in ("path", "model", "source", "reason")}
    if kind == "qa":
        ref_meta["n_truth_ratios"] = len(ref_info["value"] or [])
    else:
        ref_meta["mia_auc"] = ref_info["value"]
    timings["total_s"] = round(time.time() - t0, 3)
    full = {
        "version": SUMMARY_VERSION,
        "run_id": run_id,
        "task": kind,
        "model": model,
        "model_path": model_path,
        "started_at": started,
        "ended_at": now_iso(),
        "elapsed_s": timings["total_s"],
        "metrics": summary.pop("metrics"),
        **summary,
        "cache_keys": {"forget_truth_ratios" if kind == "qa" else "mia_auc": key},
        "reference": ref_meta,
        "data": {"forget": forget_path, "retain": retain_path, "sets": set_paths},
        "settings": {"max_new_tokens": st.max_new_tokens,
                     "verbmem_new_tokens": VERBMEM_NEW_TOKENS if kind == "text" else None,
                     "max_retain_rows": st.max_retain_rows, "batch_size": st.batch_size,
                     "max_length": st.max_length, "system_prompt": st.system_prompt,
                     "dtype": st.dtype, "device": device, "min_k": MIN_K},
        "timings": timings,
        **(meta or {}),
    }
    full = _finite(full)
    out = Path(out_dir)
    atomic_write_jsonl(out / PER_SAMPLE_FILE, per_sample)
    if tokens is not None:
        atomic_write_jsonl(out / TOKENS_FILE, tokens)
    atomic_write_json(out / SUMMARY_FILE, full)
    return full


def settings_from_config(cfg, overrides: Mapping[str, Any] | None = None) -> EvalSettings:
    ov = dict(overrides or {})
    return EvalSettings(
        max_new_tokens=int(ov.get("max_new_tokens") or cfg.eval.max_new_tokens),
        max_retain_rows=int(ov["max_retain_rows"] if ov.get("max_retain_rows") is not None
                            else cfg.eval.max_retain_rows),
        batch_size=int(ov.get("batch_size") or cfg.eval.batch_size),
        max_length=cfg.training.max_length,
        system_prompt=cfg.training.system_prompt,
        dtype=cfg.training.dtype,
        device=ov.get("device") or ("cpu" if cfg.launch.cpu else "auto"),
    )


def evaluate_run(run_dir: str | os.PathLike, progress: Progress = None, *,
                 overrides: Mapping[str, Any] | None = None,
                 out_dir: str | os.PathLike | None = None) -> dict:
    """Evaluate a run folder: its ``model/`` on its data snapshot and its ``eval`` settings.

    Writes ``RUN_DIR/eval/summary.json`` and ``eval/per_sample.jsonl`` (or into ``out_dir``)
    and returns the summary. ``overrides`` may replace ``reference``, ``sets`` (merged),
    ``max_new_tokens``, ``max_retain_rows``, ``batch_size``, ``device``. When writing into the
    run's own eval/ folder, eval/status.json says running (with the stage and its progress),
    then completed or failed (with the error).
    """
    import time as _time

    from sga_core.config import load_config
    from sga_core.runs.status import write_eval

    run_dir = Path(run_dir).resolve()
    own = out_dir is None or Path(out_dir).resolve() == run_dir / EVAL_DIR
    out = run_dir / EVAL_DIR if out_dir is None else Path(out_dir)
    last = {"stage": None, "t": 0.0}

    def report(stage: str, done: int, total: int) -> None:
        # eval/status.json follows the stage and its progress (at most about once a second)
        now = _time.monotonic()
        if own and (stage != last["stage"] or done >= total or now - last["t"] >= 1.0):
            fields = {"stage": stage, "done": done, "total": total}
            if stage != last["stage"]:
                fields["stage_started_at"] = now_iso()
            last.update(stage=stage, t=now)
            try:
                write_eval(run_dir, **fields)
            except OSError:
                pass
        _report(progress, stage, done, total)

    if own:
        write_eval(run_dir, "running", pid=os.getpid(), started_at=now_iso(), ended_at=None,
                   error=None, stage="starting", done=0, total=None)
    try:
        cfg = load_config(run_dir / "config.yaml")
        ov = dict(overrides or {})
        model_dir = run_dir / "model"
        if not (model_dir / "config.json").exists():
            raise EvalError(f"run {run_dir.name} has no saved model ({model_dir})")
        sets = {**cfg.eval.sets, **(ov.get("sets") or {})}
        sets = {k: str(cfg.resolve(v)) for k, v in sets.items()}
        reference = ov["reference"] if ov.get("reference") is not None else cfg.eval.reference
        forget = cfg.resolve(cfg.data.forget)
        retain = cfg.resolve(cfg.data.retain)
        summary = evaluate_model(
            str(model_dir), out, str(forget), str(retain) if retain else None, sets,
            reference, task=cfg.data.task, settings=settings_from_config(cfg, ov),
            progress=report, run_id=cfg.run_id or run_dir.name,
            meta={"run_dir": str(run_dir), "method": cfg.method,
                  "method_args": cfg.method_args})
    except BaseException as exc:
        if own:
            msg = str(exc) if isinstance(exc, Exception) else type(exc).__name__
            write_eval(run_dir, "failed", ended_at=now_iso(),
                       error=f"{type(exc).__name__}: {msg}", stage=None)
        raise
    if own:
        write_eval(run_dir, "completed", ended_at=now_iso(), error=None, stage=None,
                   elapsed_s=summary.get("elapsed_s"))
    return summary


def read_summary(path: str | os.PathLike) -> dict | None:
    """A run folder's (or an eval folder's) summary.json, or None."""
    p = Path(path)
    for cand in (p / EVAL_DIR / SUMMARY_FILE, p / SUMMARY_FILE, p):
        if cand.is_file():
            return read_json(cand)
    return None


def eval_status(run_dir: str | os.PathLike) -> dict:
    """The run's evaluation status (eval/status.json): state, stage, progress, error; a
    'running' evaluation whose process is gone is shown as failed."""
    from sga_core.runs.status import effective_eval

    return effective_eval(run_dir)


def format_summary(summary: dict) -> str:
    """The summary's metrics as an aligned text table (the CLI prints it)."""
    lines = [f"{'metric':28s} {'value':>12s}  note"]
    for name, m in (summary.get("metrics") or {}).items():
        v = m.get("value")
        text = "-" if v is None else f"{v:.4g}" if abs(v) < 1e4 else f"{v:.4e}"
        lines.append(f"{name:28s} {text:>12s}  {m.get('reason') or ''}".rstrip())
    ref = summary.get("reference") or {}
    if ref.get("path"):
        lines.append(f"reference: {ref['path']} ({ref.get('source') or ref.get('reason')})")
    lines.append(f"elapsed: {summary.get('elapsed_s')} s")
    return "\n".join(lines)


__all__ = [
    "EVAL_DIR", "EVAL_LOG", "PER_SAMPLE_FILE", "QA_SAMPLE_KEYS", "REFERENCE_CACHE_FILE",
    "SUMMARY_FILE", "TEXT_SAMPLE_KEYS", "EvalError", "EvalSettings", "Reference",
    "eval_status", "evaluate_model", "evaluate_qa", "evaluate_run", "evaluate_text",
    "forget_rows_key", "format_summary", "generate", "load_model_and_tokenizer", "mia_key",
    "qa_batches", "read_summary", "reference_value", "resolve_reference", "retain_subset",
    "score_qa", "settings_from_config",
]
