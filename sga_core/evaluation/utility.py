"""Utility through lm-evaluation-harness, in-process on the loaded model.

``HFLM(pretrained=model, tokenizer=...)`` wraps the model the evaluation already holds (no
second process, no second load, as the issue asks; open-unlearning's ``LMEvalEvaluator``
does the same), and each task runs through ``lm_eval.simple_evaluate`` on its own, so one
task that cannot run (its dataset neither online nor in the local HF cache, an unknown name)
gives that task a reason and the others still run. lm-eval is imported only here, inside the
function.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from sga_core.evaluation.common import Progress, report

NOT_INSTALLED = "lm-eval is not installed (pip install lm-eval==0.4.13)"


def _offline_hint(exc: BaseException, task: str) -> str:
    msg = " ".join(str(exc).split())[:300] or type(exc).__name__
    offline = os.environ.get("HF_DATASETS_OFFLINE") == "1" or \
        os.environ.get("HF_HUB_OFFLINE") == "1"
    if offline and any(w in msg.lower() for w in ("offline", "connect", "couldn't", "cache",
                                                   "not found", "doesn't exist")):
        return (f"{task}: its dataset is not in the local Hugging Face cache and the hub is "
                f"offline ({msg}); run once with network (HF_HUB_OFFLINE=0) to cache it")
    return f"{task}: {type(exc).__name__}: {msg}"


def _task_result(res: dict, task: str) -> dict:
    """The task's own entry of ``simple_evaluate``'s results; for a group (mmlu,
    truthfulqa), the group's entry, else the mean of its subtasks' numbers."""
    groups = res.get("groups") or {}
    results = res.get("results") or {}
    entry = groups.get(task) or results.get(task)
    if entry and any(k.split(",", 1)[0] in ("acc", "word_perplexity", "acc_norm")
                     for k in entry):
        return dict(entry)
    subs = [v for k, v in results.items() if k != task]
    merged: dict = {}
    for key in ("acc,none", "acc_norm,none", "word_perplexity,none"):
        vals = [float(v[key]) for v in subs if isinstance(v.get(key), (int, float))]
        if vals:
            merged[key] = sum(vals) / len(vals)
    return merged or {"error": f"{task}: no result reported"}


def run_lm_eval(model, tokenizer, tasks: Sequence[str], *, batch_size: int = 8,
                limit: int | float | None = None, include_path: str | None = None,
                max_length: int | None = None, progress: Progress = None) -> dict[str, dict]:
    """Run each lm-eval task on the loaded ``model``; returns ``task -> result dict`` (the
    metrics ``simple_evaluate`` reports, e.g. ``"acc,none"``) or ``{"error": why}``.

    ``include_path``: a folder of task YAML files (local tasks, for example the tests' own);
    ``limit``: at most this many documents per task (a float: a fraction)."""
    tasks = [t for t in dict.fromkeys(tasks) if t]
    if not tasks:
        return {}
    try:
        import lm_eval
        from lm_eval.models.huggingface import HFLM
        from lm_eval.tasks import TaskManager
    except ImportError:
        return {t: {"error": NOT_INSTALLED} for t in tasks}
    import logging

    logging.getLogger("lm-eval").setLevel(logging.ERROR)
    kwargs = {"max_length": max_length} if max_length else {}
    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size, **kwargs)
    manager = TaskManager(include_path=include_path) if include_path else TaskManager()
    known = set(manager.all_tasks)
    out: dict[str, dict] = {}
    for i, task in enumerate(tasks):
        report(progress, f"lm-eval {task}", i, len(tasks))
        if task not in known:
            out[task] = {"error": f"{task}: not an lm-eval task (lm_eval --tasks list names "
                                  "them; local YAML tasks need eval.lm_eval_include)"}
            continue
        try:
            res = lm_eval.simple_evaluate(model=lm, tasks=[task], task_manager=manager,
                                          limit=limit, log_samples=False, bootstrap_iters=0,
                                          verbosity="ERROR")
        except Exception as exc:  # noqa: BLE001 - the task's reason, the others go on
            out[task] = {"error": _offline_hint(exc, task)}
            continue
        out[task] = _task_result(res or {}, task)
    report(progress, "lm-eval", len(tasks), len(tasks))
    return out


def fill_lm_eval(model, enc, sets: dict, instances, options: dict, batch_size: int,
                 progress: Progress = None) -> dict[str, float]:
    """Run the lm-eval tasks the metrics need (the protocol's and ``eval.lm_eval_tasks``)
    into the utility set; returns the timings."""
    import time

    from sga_core.metrics.catalog import UTILITY_SET
    from sga_core.metrics.context import LM_EVAL

    if UTILITY_SET not in sets or not any(LM_EVAL in i.spec.needs for i in instances):
        return {}
    t0 = time.time()
    sets[UTILITY_SET].lm_eval = run_lm_eval(
        model, enc.tok, [r["task"] for r in sets[UTILITY_SET].rows], batch_size=batch_size,
        limit=options.get("lm_eval_limit"), include_path=options.get("lm_eval_include"),
        max_length=enc.max_length, progress=progress)
    return {"lm_eval_s": round(time.time() - t0, 3)}


def utility_tasks(options: dict) -> tuple[list[str], list[str]]:
    """``(every task to run, the extra ones)``: the protocol's own tasks then the extra
    ``lm_eval_tasks`` of the settings (each becomes an ``lm_<task>`` column)."""
    own = list(options.get("lm_eval_tasks") or ())
    extra = [t for t in options.get("extra_lm_tasks") or () if t not in own]
    return own + extra, extra
