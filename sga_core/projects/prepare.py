"""``prepare``: the TOFU protocol's two starting models, each trained as a run folder.

- ``<name>-original``: the base model fine-tuned on forget + retain rows (the model to unlearn);
- ``<name>-retain-ref``: the base model fine-tuned on retain rows only (the reference for
  Forget Quality: what a model that never saw the forget set looks like).

Both are evaluated (the "Original" and "Retained" rows of a results table): the retain
reference is trained and evaluated first, so its forget truth ratios (QA) or Min-K% AUC (text)
are in its eval/summary.json, then the original with ``eval.reference`` = the retain-ref run.
Each is evaluated in its training process (``eval.in_process``), with the model already
loaded. Runs trained later from the original should use the same reference.
"""

from __future__ import annotations

from sga_core.config import ConfigError, TrainConfig
from sga_core.fileio import remove_dir
from sga_core.runs.create import create_run
from sga_core.runs.folder import RunFolder, runs_root
from sga_core.runs.launch import run_foreground
from sga_core.runs.prepared_ids import original_id, reference_id

# Chosen on the demo with SmolLM2 (see README): answer NLL < 0.2 on forget and retain rows.
# The NLL before/after training scores a sample of each set: thousands of retain rows took
# minutes on a CPU before the first step (training.nll_rows).
PREPARE_DEFAULTS = {"lr": 1e-4, "epochs": 4, "batch_size": 8, "probe_count": 0,
                    "log_every": 1, "probe_every": 0, "nll_rows": 200, "max_length": 256,
                    "max_steps": 0}
# Text passages are longer and have many more tokens to memorise than a QA answer: the QA
# settings left a prepared Original whose forget VerbMem equalled the Retained model's (no
# forgetting could be measured). More passes, and sequences long enough to hold a news
# article's opening (MUSE's VerbMem prompts and 128-token continuations), in smaller
# batches (docs/measurability.md#what-the-prepared-models-should-reach).
PREPARE_TEXT_DEFAULTS = {**PREPARE_DEFAULTS, "epochs": 10, "max_length": 1024,
                         "batch_size": 4}


# what the settings mean in a prepare run (the CLI's help; TrainingArgs says it of unlearning)
PREPARE_HELP = {
    "epochs": "Passes over the rows each model learns: forget + retain (the original), "
              "retain only (the reference); ignored when max_steps > 0.",
    "batch_size": "Rows per optimizer step, over all processes.",
}


def prepare_defaults(task: str = "qa") -> dict:
    """The fine-tuning settings of both prepare runs for a task kind ('qa' or 'text'): the
    browser's Prepare panel and the CLI's ``prepare`` both start from these."""
    return dict(PREPARE_TEXT_DEFAULTS if task == "text" else PREPARE_DEFAULTS)


def defaults_text() -> dict[str, str]:
    """Each prepare default as the CLI's help says it ("0.0001", or "qa: 4; text: 10")."""
    qa, text = prepare_defaults("qa"), prepare_defaults("text")
    return {k: repr(qa[k]) if qa[k] == text[k] else f"qa: {qa[k]!r}; text: {text[k]!r}"
            for k in qa}


def prepare_steps(n_forget: int, n_retain: int, training: dict) -> dict[str, int]:
    """How many optimizer steps each prepare run takes ({"original": n, "retain-ref": m}):
    max_steps, else epochs over its rows (forget + retain; retain only) in batches."""
    import math

    from sga_core.train.batches import steps_per_epoch

    batch, max_steps = int(training.get("batch_size") or 1), int(training.get("max_steps") or 0)
    return {which: max_steps or max(1, math.ceil(float(training.get("epochs") or 0)
                                                 * steps_per_epoch(rows, batch)))
            for which, rows in (("original", n_forget + n_retain), ("retain-ref", n_retain))}


def prepare(forget: str, retain: str, model: str = "embedded:smollm2", name: str | None = None,
            runs_dir=None, training: dict | None = None, launch: dict | None = None,
            task: str = "qa", which: str = "both", overwrite: bool = True,
            echo=print, evaluate: bool = True, eval_sets: dict | None = None,
            eval_protocol: str | None = None, field_map: dict | None = None,
            backend: str = "local", workspace=None, max_rows: int = 0) -> dict:
    """Train the original and/or the retain reference, then (``evaluate``) evaluate them;
    returns {run_id: {state, path, model, error, eval_state, eval_error}}.

    ``backend``: where they train. A backend that schedules its jobs (SLURM: the
    workspace's cluster profile) gets both at once, each a job of its own, the original's
    held until the reference's ended well; this returns at once with each run queued and
    its job (docs/slurm.md#prepare).

    ``eval_sets`` are the extra evaluation sets (``eval.sets``: real-world QA sets, or the
    text holdout / forget_qa / retain_qa sets) recorded in both runs' configs, with the
    evaluation protocol ``eval_protocol`` (default: the demo's); ``field_map`` renames the
    data files' fields (``{"prompt": "question"}``) into the runs' snapshots; ``max_rows``
    evaluates at most that many rows of each set (``eval.max_rows``; 0 = all)."""
    name = name or "prepared"
    root = runs_root(runs_dir)
    ref_dir = root / reference_id(name)
    plan = []  # the reference first: the original's Forget Quality compares against it
    if which in ("both", "retain-ref"):
        plan.append((reference_id(name), False))
    if which in ("both", "original"):
        plan.append((original_id(name), True))
    results, cfgs = {}, []
    from sga_core.runs.queue import busy_refusal

    # a folder with a live job is never replaced
    why = busy_refusal(root, [run_id for run_id, _ in plan]) if overwrite else None
    if why:
        raise ConfigError(why)
    for run_id, include_forget in plan:
        if overwrite and (root / run_id).exists():
            remove_dir(root / run_id)  # a late status write of its ended job is no error
        cfgs.append(TrainConfig.from_dict({
            "run_id": run_id, "model": model, "method": "finetune",
            "method_args": {"include_forget": include_forget},
            "data": {"task": task, "forget": forget, "retain": retain,
                     "field_map": dict(field_map or {})},
            "training": {**prepare_defaults(task), **(training or {})},
            "launch": launch or {},
            # both are compared with the retain reference (Forget Quality, PrivLeak); the
            # reference against itself gives the paper's "Retained" row (FQ 1)
            "eval": {"enabled": bool(evaluate), "sets": dict(eval_sets or {}),
                     "reference": str(ref_dir), "protocol": eval_protocol or "demo",
                     **({"max_rows": int(max_rows)} if max_rows else {})},
            "notes": "prepare: " + ("original (forget + retain)" if include_forget
                                    else "retain reference (retain only)"),
        }))
    from sga_core.runs.backends import backend as named

    where = named(backend)
    if not where.foreground:
        return sent(where, cfgs, root, workspace, echo)
    for cfg in cfgs:
        run_id = cfg.run_id
        run_dir = create_run(cfg, root)
        echo(f"== {run_id}: fine-tuning {model} ({cfg.notes})")
        status = run_foreground(run_dir, echo=echo)  # and its evaluation, when asked
        results[run_id] = {"state": status.get("state"), "path": str(run_dir),
                           "model": str(RunFolder(run_dir).model_dir), "error": status.get("error")}
        if evaluate:
            results[run_id].update(eval_state=status.get("eval_state"),
                                   eval_error=status.get("eval_error"))
        if status.get("state") != "completed":
            break
    return results


def sent(where, cfgs: list, root, workspace, echo=print) -> dict:
    """Send the prepare runs to a backend that schedules them (SLURM: one job each, in
    order, each held until the one before ended well); {run_id: {state, path, model,
    where}}, ``where`` saying which job each is."""
    from sga_core.runs import status as run_status

    results = {}
    for run_dir in where.launch(cfgs, root, chain=True, workspace=workspace):
        st = run_status.read_run(run_dir)
        said = where.describe(st) or where.label
        echo(f"== {run_dir.name}: submitted to {where.label} ({said})")
        results[run_dir.name] = {"state": st.get("state"), "path": str(run_dir),
                                 "model": str(RunFolder(run_dir).model_dir), "where": said,
                                 **{k: v for k, v in st.items() if k.endswith("_job_id")}}
    return results
