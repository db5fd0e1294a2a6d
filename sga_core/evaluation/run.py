"""Evaluating a model or a run folder into ``summary.json`` + ``per_sample.jsonl``
(docs/spec.md#4-metrics, docs/spec.md#52-files).

- :func:`evaluate_run` evaluates a run folder (its ``model/``, its data snapshot, its
  ``eval`` settings) into ``RUN_DIR/eval/``, and keeps the evaluation's own status file
  current through :func:`sga_core.runs.status.write_eval` (state running / completed /
  failed, the stage and its progress, the error), so a UI can show it;
- :func:`evaluate_model` evaluates a bare model (a folder, a hub id, ``embedded:smollm2``) on
  given data into any folder: the retain reference's value first
  (:mod:`~sga_core.evaluation.reference`), then the model, through
  :func:`~sga_core.evaluation.qa.evaluate_qa` or :func:`~sga_core.evaluation.text.evaluate_text`.

Every model is loaded through :func:`load_model_and_tokenizer` (one seam: the tests count
loads there). torch is only imported when a model is run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sga_core.evaluation.common import (
    PER_SAMPLE_FILE,
    SUMMARY_FILE,
    SUMMARY_VERSION,
    TOKENS_FILE,
    EvalCancelled,
    EvalError,
    Progress,
    finite,
    free_memory,
    is_qa_rows,
    report,
    retain_subset,
)
from sga_core.evaluation.inputs import counter
from sga_core.evaluation.qa import evaluate_qa, reference_truth_ratios
from sga_core.evaluation.reference import (
    completions_key,
    forget_rows_key,
    is_same_model,
    mia_key,
    reference_value,
    resolve_reference,
    self_reference_info,
)
from sga_core.evaluation.text import (
    evaluate_text,
    full_text,
    prompt_and_continuation,
    reference_auc,
    reference_completions,
)
from sga_core.fileio import atomic_write_json, atomic_write_jsonl, now_iso
from sga_core.metrics.catalog import MIN_K
from sga_core.protocols import (
    ICL_SUFFIX,
    PROMPT_FORMATS,
    SET_ROLES,
    WIKITEXT_TASK,
    Protocol,
    check_prompt_format,
    get_protocol,
)

TOKEN_STAGE = "token probabilities"  # the progress stage of the token table


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
        kind = "qa" if is_qa_rows(rows) else "text"
    return rows, None, kind


@dataclass
class EvalSettings:
    """How one evaluation runs. ``protocol`` names the preset
    (:mod:`~sga_core.protocols`); ``max_new_tokens`` / ``max_retain_rows`` left
    None take the protocol's, and the protocol's text limit (``max_length``) replaces this
    one when it has its own. ``lm_eval_tasks`` are extra lm-eval utility tasks."""

    max_new_tokens: int | None = None
    max_retain_rows: int | None = None
    max_rows: int = 0  # QA and text: at most this many rows of every set (0 = all)
    batch_size: int = 16
    max_length: int = 256
    system_prompt: str | None = None
    dtype: str = "float32"
    device: str = "auto"
    protocol: str = "demo"
    prompt_format: str | None = None  # a PROMPT_FORMATS key; None = the protocol's
    lm_eval_tasks: tuple[str, ...] = ()
    lm_eval_limit: float | None = None
    lm_eval_include: str | None = None
    retrained_auc: float | None = None

    def resolve(self) -> tuple[Protocol, EvalSettings, dict]:
        """``(protocol, these settings with the protocol's values filled in, metric
        options)``; the options are the protocol's settings plus the run's extras."""
        from dataclasses import replace

        proto = get_protocol(self.protocol)
        fmt = check_prompt_format(self.prompt_format) or proto.prompt_format
        st = replace(self, protocol=proto.name, prompt_format=fmt,
                     max_new_tokens=proto.qa_new_tokens if self.max_new_tokens is None
                     else int(self.max_new_tokens),
                     max_retain_rows=proto.max_retain_rows if self.max_retain_rows is None
                     else int(self.max_retain_rows),
                     max_length=proto.max_length or self.max_length)
        options = {**proto.settings(), "prompt_format": fmt,
                   "zero_shot_tasks": [t for t in proto.lm_eval_tasks if t != WIKITEXT_TASK],
                   "extra_lm_tasks": list(self.lm_eval_tasks or ()),
                   "lm_eval_limit": self.lm_eval_limit, "lm_eval_include": self.lm_eval_include,
                   "retrained_auc": self.retrained_auc}
        return proto, st, options

    def encoder(self, tok, model=None):
        """The Encoder of these (resolved) settings: the prompt format's tags, the text limit
        capped at the model's positions."""
        from sga_core.model.encoding import Encoder

        limit = self.max_length
        positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            limit = min(limit, positions)
        return Encoder(tok, max_length=limit, system_prompt=self.system_prompt,
                       tags=PROMPT_FORMATS.get(self.prompt_format or "chat"))


def _reference(kind: str, reference: str | None, model: str, forget_rows: list[dict],
               set_rows: dict[str, list[dict]], st: EvalSettings, device: str,
               progress: Progress, options: dict) -> tuple[dict, str, bool]:
    """The retain reference's value for this evaluation: ``(info, cache key, self)``, where
    ``self`` says the evaluated model is the reference itself."""
    ref = resolve_reference(reference)
    self_ref = is_same_model(ref, model)

    if kind == "qa":
        extra = {k: v for k, v in (("prompt_format", st.prompt_format),
                                   ("epsilon", options.get("epsilon"))) if v not in ("chat", 0.0)}
        key = forget_rows_key(forget_rows, st.max_length, st.system_prompt, **extra)
        kind_key = "forget_truth_ratios"

        def compute(m, tok):
            return reference_truth_ratios(m, st.encoder(tok, m), forget_rows, st.batch_size,
                                          device, progress, options)
    elif options.get("name") == "copyright":
        pairs = [prompt_and_continuation(r) for r in forget_rows]
        key = completions_key(pairs, st.max_length, options.get("completion_new_tokens"))
        kind_key = "copyright_scores"

        def compute(m, tok):
            return reference_completions(m, st.encoder(tok, m), forget_rows, st.batch_size,
                                         device, options, progress)
    else:
        holdout = set_rows.get("holdout") or []
        key = mia_key([full_text(r) for r in forget_rows], [full_text(r) for r in holdout],
                      st.max_length)
        kind_key = "mia_auc"

        def compute(m, tok):
            return reference_auc(m, st.encoder(tok, m), forget_rows, holdout, st.batch_size,
                                 device, progress)

        if not self_ref and not holdout:
            return ({"value": None, "source": None, "path": reference,
                     "model": ref.model if ref else None,
                     "reason": "no holdout set (eval.sets.holdout)"}, key, self_ref)
    if self_ref:
        return self_reference_info(ref), key, self_ref
    return (reference_value(ref, kind_key, key, compute, load=load_model_and_tokenizer,
                            dtype=st.dtype, device=device, progress=progress), key, self_ref)


def evaluate_model(model: str, out_dir: str | os.PathLike, forget, retain=None,
                   sets: Mapping[str, Any] | None = None, reference: str | None = None, *,
                   task: str = "auto", settings: EvalSettings | None = None,
                   progress: Progress = None, run_id: str | None = None,
                   meta: dict | None = None, loaded: tuple | None = None) -> dict:
    """Evaluate a model spec (folder, hub id, ``embedded:...``) into ``out_dir``.

    ``loaded``: ``(model, tokenizer)`` already in memory (the training process evaluating
    the model it just trained); ``model`` then only names it.

    ``forget`` / ``retain`` / each of ``sets`` is a data file or a list of rows; ``task`` is
    'qa', 'text' or 'auto' (from the forget data). The sets ``forget_eval`` and
    ``retain_eval`` (a benchmark's own evaluation rows) replace the forget / retain rows.
    Writes ``out_dir/per_sample.jsonl`` and then ``out_dir/summary.json`` (atomically) and
    returns the summary.
    """
    proto, st, options = (settings or EvalSettings()).resolve()
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
    # a benchmark's own evaluation rows replace the training rows: TOFU's retain_perturbed
    # (retain_eval), MUSE's verbmem forget passages (forget_eval)
    # (the roles that replace rows: sga_core.protocols.SET_ROLES)
    for name, role in SET_ROLES.items():
        if role.replaces == "forget" and set_rows.get(name):
            forget_rows = set_rows.pop(name)
        elif role.replaces == "retain" and set_rows.get(name):
            retain_rows = set_rows.pop(name)
    row_ids, rows_of = {}, {}
    if st.max_rows:  # a subset of every set, the same for the reference (its key: the rows)
        forget_rows, row_ids["forget"], rows_of["forget"] = _subset(forget_rows, st.max_rows)
        retain_rows, row_ids["retain"], rows_of["retain"] = _subset(retain_rows or [],
                                                                    st.max_rows)
        for name in list(set_rows):
            if not name.endswith(ICL_SUFFIX):
                set_rows[name], row_ids[name], rows_of[name] = _subset(set_rows[name],
                                                                       st.max_rows)
        rows_of = {n: total for n, total in rows_of.items()
                   if total > len(row_ids[n])}
    device = choose_device(st.device)
    timings: dict[str, float] = {}

    # the reference's value first (the reference model, if it must be loaded, is freed
    # before the evaluated model is loaded)
    ts = time.time()
    ref_info, key, self_ref = _reference(kind, reference, model, forget_rows, set_rows, st,
                                         device, progress, options)
    timings["reference_s"] = round(time.time() - ts, 3)

    ts = time.time()
    report(progress, "loading the model", 0, 1)
    m, tok = loaded or load_model_and_tokenizer(model, dtype=st.dtype, device=device)
    enc = st.encoder(tok, m)
    report(progress, "loading the model", 1, 1)
    timings["load_s"] = round(time.time() - ts, 3)
    try:
        if kind == "qa":
            summary, per_sample = evaluate_qa(
                m, enc, forget_rows, retain_rows, set_rows, ref_info["value"],
                st.max_new_tokens, st.batch_size, progress, max_retain_rows=st.max_retain_rows,
                device=device, reference_reason=ref_info["reason"], self_reference=self_ref,
                options=options, row_ids=row_ids)
            # per-token probabilities of the forget answers (the Token probabilities page)
            from sga_core.model.forward import row_token_table

            ts_tok = time.time()
            tokens = _own_index(row_token_table(m, enc, forget_rows, "qa", "forget", device,
                                                counter(progress, TOKEN_STAGE,
                                                        len(forget_rows))), row_ids)
            summary.setdefault("timings", {})["tokens_s"] = round(time.time() - ts_tok, 3)
        else:
            summary, per_sample = evaluate_text(
                m, enc, forget_rows, retain_rows, set_rows, ref_info["value"],
                st.max_new_tokens, st.batch_size, progress, max_retain_rows=st.max_retain_rows,
                device=device, reference_reason=ref_info["reason"], self_reference=self_ref,
                verbmem_new_tokens=proto.verbmem_new_tokens, options=options,
                row_ids=row_ids)
            # the same token table for text: each forget passage's continuation, cut to the
            # tokens VerbMem compares (docs/token-probabilities.md)
            from sga_core.evaluation.text import drop_end_token, token_rows
            from sga_core.model.forward import row_token_table

            ts_tok = time.time()
            rows = token_rows(enc.tok, forget_rows, proto.verbmem_new_tokens)
            tokens = [{**t, "prompt": r["prompt"]} for t, r in zip(_own_index(drop_end_token(
                row_token_table(m, enc, rows, "text", "forget", device,
                                counter(progress, TOKEN_STAGE, len(rows)))), row_ids), rows)]
            timings["tokens_s"] = round(time.time() - ts_tok, 3)
    finally:
        del m
        free_memory()
    if rows_of:  # what the limit left out: the results say "n of N rows"
        summary["rows_of"] = rows_of
        if "retain" in rows_of:  # the retain subset's indices are of the whole set
            summary["retain_rows_total"] = rows_of["retain"]
            summary["retain_indices"] = [r["index"] for r in per_sample
                                         if r.get("set") == "retain"]
    timings.update(summary.pop("timings", {}))

    from sga_core.model.loading import resolve_model_path

    try:
        model_path = resolve_model_path(model)
    except Exception:  # noqa: BLE001 - metadata only
        model_path = model
    ref_meta = {k: ref_info.get(k) for k in ("path", "model", "source", "reason")}
    if kind == "qa":
        ref_meta["n_truth_ratios"] = len(ref_info["value"] or [])
    elif options.get("name") == "copyright":
        ref_meta["completion_scores"] = ref_info["value"]
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
        "cache_keys": {_kind_key(kind, options): key},
        "protocol": {**proto.settings(), "prompt_format": st.prompt_format,
                     "description": proto.describe(),
                     "extra_lm_tasks": list(st.lm_eval_tasks or ()),
                     "retrained_auc": st.retrained_auc},
        "reference": ref_meta,
        "data": {"forget": forget_path, "retain": retain_path, "sets": set_paths},
        "settings": {"max_new_tokens": st.max_new_tokens,
                     "verbmem_new_tokens": proto.verbmem_new_tokens if kind == "text" else None,
                     "max_retain_rows": st.max_retain_rows, "max_rows": st.max_rows,
                     "batch_size": st.batch_size,
                     "max_length": st.max_length, "system_prompt": st.system_prompt,
                     "dtype": st.dtype, "device": device, "min_k": MIN_K},
        "timings": timings,
        **(meta or {}),
    }
    full = finite(full)
    out = Path(out_dir)
    atomic_write_jsonl(out / PER_SAMPLE_FILE, per_sample)
    if tokens is not None:
        atomic_write_jsonl(out / TOKENS_FILE, tokens)
    atomic_write_json(out / SUMMARY_FILE, full)
    return full


def _subset(rows: list[dict], max_rows: int) -> tuple[list[dict], list[int], int]:
    """At most ``max_rows`` of ``rows``, evenly spaced (as the retain subset): ``(rows
    kept, their indices, how many there were)``."""
    keep = retain_subset(len(rows), max_rows)
    return [rows[i] for i in keep], keep, len(rows)


def _own_index(tokens: list[dict], row_ids: dict[str, list[int]]) -> list[dict]:
    """Token records of the forget rows with each row's own index (``eval.max_rows``)."""
    ids = row_ids.get("forget")
    return [{**t, "index": ids[t["index"]]} for t in tokens] if ids else tokens


def _kind_key(kind: str, options: dict) -> str:
    """The cache kind of the reference's value for a task kind and protocol."""
    if kind == "qa":
        return "forget_truth_ratios"
    return "copyright_scores" if options.get("name") == "copyright" else "mia_auc"


def settings_from_config(cfg, overrides: Mapping[str, Any] | None = None) -> EvalSettings:
    """A run's evaluation settings: its ``eval`` section (the protocol; ``max_new_tokens``
    and ``max_retain_rows`` are the demo protocol's), overridden by ``overrides``."""
    ov = dict(overrides or {})
    ev = cfg.eval
    protocol = ov.get("protocol") or ev.protocol
    demo = get_protocol(protocol).name == "demo"
    new = ov.get("max_new_tokens") or (ev.max_new_tokens if demo else None)
    rows = ov["max_retain_rows"] if ov.get("max_retain_rows") is not None else (
        ev.max_retain_rows if demo else None)
    return EvalSettings(
        max_new_tokens=None if new is None else int(new),
        max_retain_rows=None if rows is None else int(rows),
        max_rows=int(ov["max_rows"] if ov.get("max_rows") is not None
                     else getattr(ev, "max_rows", 0) or 0),
        batch_size=int(ov.get("batch_size") or ev.batch_size),
        max_length=cfg.training.max_length,
        system_prompt=cfg.training.system_prompt,
        dtype=cfg.training.dtype,
        device=ov.get("device") or ("cpu" if cfg.launch.device == "cpu" else "auto"),
        protocol=protocol,
        prompt_format=ov.get("prompt_format") or ev.prompt_format,
        lm_eval_tasks=tuple(ov.get("lm_eval_tasks") or ev.lm_eval_tasks or ()),
        lm_eval_limit=ov.get("lm_eval_limit") if ov.get("lm_eval_limit") is not None
        else ev.lm_eval_limit,
        lm_eval_include=ov.get("lm_eval_include") or ev.lm_eval_include,
        retrained_auc=ov.get("retrained_auc") if ov.get("retrained_auc") is not None
        else ev.retrained_auc,
    )


def evaluate_run(run_dir: str | os.PathLike, progress: Progress = None, *,
                 overrides: Mapping[str, Any] | None = None,
                 out_dir: str | os.PathLike | None = None, loaded: tuple | None = None) -> dict:
    """Evaluate a run folder: its ``model/`` on its data snapshot and its ``eval`` settings.

    Writes ``RUN_DIR/eval/summary.json`` and ``eval/per_sample.jsonl`` (or into ``out_dir``)
    and returns the summary. ``overrides`` may replace ``reference``, ``sets`` (merged),
    ``max_new_tokens``, ``max_retain_rows``, ``batch_size``, ``device``. When writing into the
    run's own eval/ folder, eval/status.json says running (with the stage and its progress),
    then completed or failed (with the error).
    """
    from sga_core.model.loading import is_model_folder
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.status import write_eval

    run_dir = Path(run_dir).resolve()
    run = RunFolder(run_dir)
    own = out_dir is None or Path(out_dir).resolve() == run.eval_dir
    out = run.eval_dir if out_dir is None else Path(out_dir)
    last = {"stage": None, "t": 0.0}

    def follow(stage: str, done: int, total: int) -> None:
        # eval/status.json follows the stage and its progress (at most about once a second)
        now = time.monotonic()
        if own and (stage != last["stage"] or done >= total or now - last["t"] >= 1.0):
            fields = {"stage": stage, "done": done, "total": total}
            if stage != last["stage"]:
                fields["stage_started_at"] = now_iso()
            last.update(stage=stage, t=now)
            try:
                write_eval(run_dir, **fields)
            except OSError:
                pass
        report(progress, stage, done, total)

    if own:
        write_eval(run_dir, "running", pid=os.getpid(), started_at=now_iso(), ended_at=None,
                   error=None, stage="starting", done=0, total=None)
    try:
        cfg = run.config()
        ov = dict(overrides or {})
        model_dir = run.model_dir
        if loaded is None and not is_model_folder(model_dir):
            raise EvalError(f"run {run_dir.name} has no saved model ({model_dir})")
        sets = {**cfg.eval.sets, **(ov.get("sets") or {})}
        sets = {k: str(cfg.resolve(v)) for k, v in sets.items()}
        reference = ov["reference"] if ov.get("reference") is not None else cfg.eval.reference
        forget = cfg.resolve(cfg.data.forget)
        retain = cfg.resolve(cfg.data.retain)
        summary = evaluate_model(
            str(model_dir), out, str(forget), str(retain) if retain else None, sets,
            reference, task=cfg.data.task, settings=settings_from_config(cfg, ov),
            progress=follow, run_id=cfg.run_id or run_dir.name,
            meta={"run_dir": str(run_dir), "method": cfg.method,
                  "method_args": cfg.method_args, "in_process": loaded is not None},
            loaded=loaded)
    except BaseException as exc:
        if own:
            msg = str(exc) if isinstance(exc, Exception) else type(exc).__name__
            stopped = isinstance(exc, (EvalCancelled, KeyboardInterrupt))
            write_eval(run_dir, "cancelled" if stopped else "failed", ended_at=now_iso(),
                       error=f"{type(exc).__name__}: {msg}", stage=None)
        raise
    if own:
        write_eval(run_dir, "completed", ended_at=now_iso(), error=None, stage=None,
                   elapsed_s=summary.get("elapsed_s"))
    return summary




def eval_status(run_dir: str | os.PathLike) -> dict:
    """The run's evaluation status: state, stage, progress, error; a 'running' evaluation
    whose process is gone is shown as failed."""
    from sga_core.runs.status import effective_eval

    return effective_eval(run_dir)
