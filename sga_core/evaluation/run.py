"""Evaluating a model or a run folder into ``summary.json`` + ``per_sample.jsonl``
(docs/spec.md#4-metrics, docs/spec.md#52-files).

- :func:`evaluate_run` evaluates a run folder (its ``model/``, its data snapshot, its
  ``eval`` settings) into ``RUN_DIR/eval/``, and keeps the evaluation's own status file
  current through :func:`sga_core.runs.status.write_eval` (state running / completed /
  failed, the stage and its progress, the error), so a UI can show it;
- :func:`evaluate_model` evaluates a bare model (a folder, a hub id, ``embedded:smollm2``) on
  given data into any folder: its rows (:mod:`~sga_core.evaluation.rows`) under its settings
  (:mod:`~sga_core.evaluation.settings`), the retain reference's value first
  (:mod:`~sga_core.evaluation.task_reference`), then the model, through
  :func:`~sga_core.evaluation.qa.evaluate_qa` or :func:`~sga_core.evaluation.text.evaluate_text`.

Every model is loaded through :func:`load_model_and_tokenizer` (one seam: the tests count
loads there). torch is only imported when a model is run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sga_core.evaluation.common import (
    LAYERS_FILE,
    PER_SAMPLE_FILE,
    SUMMARY_FILE,
    SUMMARY_VERSION,
    TOKENS_FILE,
    EvalCancelled,
    EvalError,
    Progress,
    finite,
    free_memory,
    report,
)
from sga_core.evaluation.inputs import counter
from sga_core.evaluation.qa import evaluate_qa
from sga_core.evaluation.rows import eval_rows, own_index
from sga_core.evaluation.settings import EvalSettings, settings_from_config
from sga_core.evaluation.task_reference import (
    mia_reference,
    reference_kind,
    reference_meta,
    task_reference,
)
from sga_core.evaluation.text import evaluate_text
from sga_core.fileio import atomic_write_json, atomic_write_jsonl, now_iso
from sga_core.metrics.catalog import MIN_K

TOKEN_STAGE = "token probabilities"  # the progress stage of the token table
LAYER_STAGE = "layer view"  # the progress stage of the per-layer table (the logit lens)


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
    data = eval_rows(forget, retain, sets, task, st.max_rows)
    kind, forget_rows, retain_rows, set_rows = data.kind, data.forget, data.retain, data.sets
    row_ids, rows_of = data.row_ids, data.rows_of
    device = choose_device(st.device)
    timings: dict[str, float] = {}

    # the reference's value first (the reference model, if it must be loaded, is freed
    # before the evaluated model is loaded)
    ts = time.time()
    ref_info, key, self_ref = task_reference(kind, reference, model, forget_rows, set_rows,
                                             st, device, progress, options,
                                             load=load_model_and_tokenizer,
                                             row_ids=row_ids)
    # a QA evaluation's PrivLeak: the reference's attack AUCs on the forget / holdout rows
    mia_info, mia_cache_key = (mia_reference(kind, reference, model, forget_rows, set_rows, st,
                                             device, progress, load=load_model_and_tokenizer)
                               if kind == "qa" else (None, None))
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
                options=options, row_ids=row_ids, mia_reference=mia_info["value"],
                mia_reference_reason=mia_info["reason"])
            # per-token probabilities of the forget answers (the Token probabilities page)
            from sga_core.model.forward import row_token_table

            ts_tok = time.time()
            tokens = own_index(row_token_table(m, enc, forget_rows, "qa", "forget", device,
                                               counter(progress, TOKEN_STAGE,
                                                       len(forget_rows))), row_ids)
            summary.setdefault("timings", {})["tokens_s"] = round(time.time() - ts_tok, 3)
            layers = _layer_table(m, enc, forget_rows, "qa", device, progress, row_ids,
                                  summary, st.layer_view, st.tuned_lens)
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
            tokens = [{**t, "prompt": r["prompt"]} for t, r in zip(own_index(drop_end_token(
                row_token_table(m, enc, rows, "text", "forget", device,
                                counter(progress, TOKEN_STAGE, len(rows)))), row_ids), rows)]
            timings["tokens_s"] = round(time.time() - ts_tok, 3)
            layers = [{**t, "prompt": r["prompt"]} for t, r in zip(
                _layer_table(m, enc, rows, "text", device, progress, row_ids, summary,
                             st.layer_view, st.tuned_lens), rows)]
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
        "cache_keys": {reference_kind(kind, options): key,
                       **({"mia_aucs": mia_cache_key} if mia_cache_key else {})},
        "protocol": {**proto.settings(), "prompt_format": st.prompt_format,
                     "description": proto.describe(),
                     "extra_lm_tasks": list(st.lm_eval_tasks or ()),
                     "retrained_auc": st.retrained_auc, "mia_gradnorm": st.mia_gradnorm},
        "reference": reference_meta(kind, options, ref_info, mia_info),
        "data": {"forget": data.forget_path, "retain": data.retain_path, "sets": data.set_paths},
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
    if layers:
        atomic_write_jsonl(out / LAYERS_FILE, layers)
    else:  # no stale layer table of an earlier evaluation beside this one's tokens
        (out / LAYERS_FILE).unlink(missing_ok=True)
    atomic_write_json(out / SUMMARY_FILE, full)
    return full


def _layer_table(m, enc, rows: list[dict], kind: str, device: str, progress: Progress,
                 row_ids, summary: dict, on: bool = True, tuned: str | None = None
                 ) -> list[dict]:
    """The per-layer table of the forget rows (the logit lens,
    :func:`sga_core.model.lens.row_layer_table`; text: without the end-of-text token, as the
    token table), its time in ``summary["timings"]["layers_s"]`` and what was read in
    ``summary["layer_view"]``; [] with the reason there for a model the lens cannot read,
    or when it is switched off (``on``: :attr:`EvalSettings.layer_view`)."""
    from sga_core.model.lens import LensUnsupported, row_layer_table
    from sga_core.model.tuned_lens import TunedLensError, translators

    if not on:
        summary["layer_view"] = {"lens": None, "reason": "switched off (eval.layer_view: false)"}
        return []
    ts = time.time()
    view: dict = {}
    try:
        translate = None
        if tuned:  # refused (wrong size, damaged): the logit lens, saying why
            try:
                translate = translators(tuned, m)
                view["tuned_lens"] = str(tuned)
            except TunedLensError as exc:
                view["reason"] = f"the tuned lens was not used: {exc}"
        table = own_index(row_layer_table(m, enc, rows, kind, "forget", device,
                                          counter(progress, LAYER_STAGE, len(rows)),
                                          drop_last=kind == "text", translate=translate),
                          row_ids)
    except LensUnsupported as exc:
        summary["layer_view"] = {"lens": None, "reason": f"the logit lens cannot read {exc}"}
        return []
    summary.setdefault("timings", {})["layers_s"] = round(time.time() - ts, 3)
    summary["layer_view"] = {"lens": table[0]["lens"] if table else None,
                             "layers": len(table[0]["probs"]) if table else 0, **view}
    return table


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
