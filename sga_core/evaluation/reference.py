"""The retain reference: where its model and values are, and its value cached once per
reference and data.

Forget Quality needs the reference's forget truth ratios, PrivLeak its attacks' AUCs, the
copyright task's FQ gap its completions' BLEU and ROUGE-L. Such a
value is taken from the reference run's own ``eval/summary.json`` when it was computed on the
same rows with the same settings, else from ``<reference>/eval/reference_cache.json`` (keyed
by a hash of the rows and settings), else computed now with the reference model and written
to that cache.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sga_core.evaluation.common import (
    EVAL_DIR,
    REFERENCE_CACHE_FILE,
    SUMMARY_FILE,
    SUMMARY_VERSION,
    Progress,
    finite,
    free_memory,
    report,
)
from sga_core.fileio import atomic_write_json, now_iso, read_json
from sga_core.metrics.catalog import MIN_K, REFERENCE_ATTACKS, auc_name

#: why Forget Quality (and PrivLeak) are missing when no retain reference is set
NO_REFERENCE = ("no retain reference (the model trained on the retain rows only): prepare "
                "the project's models (Train page, Prepare models; or python -m sga_core "
                "prepare), name a published Retained model or eval log (Data page, "
                "Published models), or set eval.reference")


@dataclass
class Reference:
    """Where a retain reference's model, own summary and value cache are."""

    given: str
    model: str | None = None  # a spec load_model understands
    cache_dir: Path | None = None
    summary_path: Path | None = None
    problem: str | None = None  # why it cannot be used
    logs: Path | None = None  # a retain model's published eval log (ou_logs), no model

    @property
    def cache_path(self) -> Path | None:
        return self.cache_dir / REFERENCE_CACHE_FILE if self.cache_dir else None


def _rows_key(kind: str, payload: Any, settings: Mapping) -> str:
    """A short hash of the rows and the settings that change the reference's values."""
    blob = json.dumps({"kind": kind, "rows": payload, "settings": dict(settings)},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:24]


def forget_rows_key(rows: Sequence[dict], max_length: int, system_prompt: str | None,
                    **protocol) -> str:
    """Key of forget truth ratios: the rows' question and candidate answers + encoding (+ the
    protocol's prompt format and epsilon where they are not the demo's)."""
    payload = [[r.get("question"), r.get("answer"), r.get("paraphrased_answer"),
                list(r.get("perturbed_answer") or [])] for r in rows]
    return _rows_key("forget_truth_ratios", payload,
                     {"max_length": max_length, "system_prompt": system_prompt, **protocol})


def completions_key(pairs: Sequence[tuple[str, str]], max_length: int,
                    new_tokens: int | None) -> str:
    """Key of a retained model's copyright scores: the prompts, continuations and lengths."""
    return _rows_key("copyright_scores", [list(p) for p in pairs],
                     {"max_length": max_length, "new_tokens": new_tokens})


def mia_key(forget_texts: Sequence, holdout_texts: Sequence, max_length: int,
            **settings) -> str:
    """Key of the attacks' AUCs and the rows' losses (kind ``mia_aucs``): the forget and
    holdout texts (QA: each row's question and answer) + max_length, k and ``settings``
    (the attacks computed; for QA the prompt's encoding)."""
    return _rows_key("mia_aucs", [list(forget_texts), list(holdout_texts)],
                     {"max_length": max_length, "k": MIN_K, **settings})


def _is_run_dir(path: Path) -> bool:
    from sga_core.runs.folder import RunFolder

    run = RunFolder(path)
    return run.exists() or run.status_path.exists()


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
    a run folder, a bare model folder, or a model id / ``embedded:...`` spec; or a retain
    model's published eval log (a ``.json`` file, or a folder holding ``TOFU_EVAL.json`` /
    ``MUSE_EVAL.json``: :mod:`~sga_core.evaluation.ou_logs`)."""
    if ref is None or not str(ref).strip():
        return None
    given = str(ref).strip()
    from sga_core.model.loading import cache_dir, is_embedded, is_model_folder
    from sga_core.runs.folder import RunFolder

    path = Path(given).expanduser()
    if path.is_file():  # a retain model's published eval log (TOFU_EVAL.json, ...)
        return Reference(given, logs=path.resolve()) if path.suffix == ".json" else \
            Reference(given, problem=f"the reference {given} is a file, neither a model "
                                     "folder nor an eval log (TOFU_EVAL.json, MUSE_EVAL.json)")
    if path.is_dir():
        path = path.resolve()
        run = RunFolder(path)
        if run.has_model():
            return Reference(given, str(run.model_dir), run.eval_dir, run.summary_path)
        if is_model_folder(path):
            if _is_run_dir(path.parent):
                return Reference(given, str(path), path.parent / EVAL_DIR,
                                 path.parent / EVAL_DIR / SUMMARY_FILE)
            from sga_core.model.published import hub_cache

            if path.is_relative_to(hub_cache().resolve()):  # never written into the HF cache
                return Reference(given, str(path), cache_dir() / "reference_cache" /
                                 "_".join(path.parts[-3:]), None)
            return Reference(given, str(path), path / EVAL_DIR, None)
        if _is_run_dir(path):
            from sga_core.runs.status import effective_run

            st = effective_run(path)
            return Reference(given, problem=f"the reference run {path.name} has no model yet "
                                            f"(state: {st.get('state', 'unknown')})")
        from sga_core.evaluation.ou_logs import LogError, find_logs

        try:
            logs = find_logs(path)
        except LogError as exc:
            return Reference(given, problem=str(exc))
        if logs is not None:  # OU's saves/eval/<retain model>/ folder
            return Reference(given, logs=logs)
        return Reference(given, problem=f"the reference {given} holds no model (config.json)")
    if is_embedded(given) or not given.startswith(("/", ".", "~")) and not path.exists():
        slug = "".join(c if c.isalnum() or c in "-_." else "_" for c in given)[:100]
        return Reference(given, given, cache_dir() / "reference_cache" / slug, None)
    return Reference(given, problem=f"the reference {given} does not exist")
def _cached_value(ref: Reference, kind: str, key: str) -> tuple[Any, str | None]:
    """A reference value from its own summary, or from its cache file; (value, source)."""
    if ref.summary_path is not None and ref.summary_path.exists():
        from sga_core.runs.validate import SUMMARY_FIELDS, Damaged, mapping, opt, read_json_file

        try:  # a damaged reference summary is no source: the value is computed afresh
            summ = read_json_file(ref.summary_path.parent, ref.summary_path.name,
                                  {**SUMMARY_FIELDS, "cache_keys": opt(mapping)}) or {}
        except Damaged:
            summ = {}
        if (summ.get("cache_keys") or {}).get(kind) == key:
            if kind == "forget_truth_ratios" and summ.get("forget_truth_ratios"):
                return summ["forget_truth_ratios"], "reference summary"
            metrics = summ.get("metrics") or {}
            if kind == "mia_aucs" and summ.get("mia_losses"):
                v = {a: (metrics.get(auc_name(a)) or {}).get("value")
                     for a in (*REFERENCE_ATTACKS, "gradnorm")}
                v["reference"] = 0.5  # the Reference attack of a model against itself
                if v["gradnorm"] is None:  # not asked for (the key says whether it was)
                    del v["gradnorm"]
                if None not in v.values():
                    return {"aucs": v, "losses": summ["mia_losses"]}, "reference summary"
            if kind == "copyright_scores":
                v = {"bleu": (metrics.get("forget_bleu") or {}).get("value"),
                     "rouge": (metrics.get("forget_completion_rouge") or {}).get("value")}
                if None not in v.values():
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


def cached_value(ref: Reference | None, kind: str, key: str) -> Any:
    """The reference's value for ``kind`` and ``key`` from its own summary or its cache, or
    None; never loads a model (evaluation during training reads the reference this way)."""
    if ref is None or ref.problem:
        return None
    if ref.logs is not None:  # every row of a published log (the caller checks the count)
        from sga_core.evaluation.ou_logs import LogError, read_logs

        try:
            logs = read_logs(ref.logs)
        except LogError:
            return None
        if kind == "forget_truth_ratios" and logs.truth_ratios and not logs.summary:
            return [logs.truth_ratios.get(i) for i in range(len(logs.truth_ratios))]
        if kind == "mia_aucs" and "mia_auc" in logs.aucs:  # every attack the log scored
            from sga_core.evaluation.ou_logs import attack_of

            return {"aucs": {attack_of(n): v for n, v in logs.aucs.items()}}
        return None
    return _cached_value(ref, kind, key)[0]


def _store_cache(ref: Reference, kind: str, key: str, value: Any, n_rows: int | None) -> None:
    path = ref.cache_path
    if path is None:
        return
    try:
        data = read_json(path, default={}) or {}
    except (OSError, ValueError):
        data = {}
    entries = data.get("entries") or {}
    entries[key] = {"kind": kind, "value": finite(value), "rows": n_rows,
                    "model": ref.model, "computed_at": now_iso()}
    try:
        atomic_write_json(path, {"version": SUMMARY_VERSION, "entries": entries})
    except OSError:  # a read-only reference folder: the value is simply not cached
        pass


def reference_value(ref: Reference | None, kind: str, key: str,
                    compute: Callable[[Any, Any], Any], *, load: Callable,
                    dtype: str = "float32", device: str = "cpu",
                    progress: Progress = None) -> dict:
    """The reference's value for ``kind`` ('forget_truth_ratios', 'mia_aucs': ``{"aucs":
    {attack: AUC}, "losses": {set: [...]}}``, or 'copyright_scores'), cached once
    per reference and data. Returns ``{"value", "source", "reason", "path", "model"}``;
    ``compute(model, tokenizer)`` runs only when neither the reference's own summary nor its
    cache has the value for ``key``, on the model ``load(spec, dtype=, device=)`` returns
    with its tokenizer."""
    info: dict[str, Any] = {"value": None, "source": None, "reason": None,
                            "path": ref.given if ref else None,
                            "model": ref.model if ref else None}
    if ref is None:
        info["reason"] = NO_REFERENCE
        return info
    if ref.problem:
        info["reason"] = ref.problem
        return info
    if ref.model is None:  # an eval log (ou_logs gives its values): no model to compute on
        info["reason"] = f"the reference {ref.given} is an eval log without {kind}"
        return info
    value, source = _cached_value(ref, kind, key)
    if value is not None:
        info.update(value=value, source=source)
        return info
    report(progress, "loading the reference model", 0, 1)
    try:
        model, tok = load(ref.model, dtype=dtype, device=device)
    except Exception as exc:  # noqa: BLE001 - reported as the metric's reason
        info["reason"] = f"cannot load the reference model: {exc}"
        return info
    report(progress, "loading the reference model", 1, 1)
    try:
        value = compute(model, tok)
    finally:
        del model
        free_memory()
    if value is None:
        info["reason"] = "the reference model's value could not be computed"
        return info
    _store_cache(ref, kind, key, value, len(value) if isinstance(value, list) else None)
    info.update(value=finite(value), source="computed")
    return info

