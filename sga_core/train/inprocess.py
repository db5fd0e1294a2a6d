"""Evaluating a run in its training process (``eval.in_process``,
docs/decisions/002-in-process-evaluation.md): right after training, on the model as it is in memory,
into the run's ``eval/`` through :func:`sga_core.evaluation.run.evaluate_run` (the same files and
``eval/status.json`` as the separate ``python -m sga_core eval`` process, which remains for runs
over several processes and for ``eval.in_process: false``)."""

from __future__ import annotations

import time

from sga_core.evaluation.common import EvalCancelled
from sga_core.runs.folder import CANCEL_FILE


class EvalStopped(EvalCancelled):
    """A cancel request during the in-process evaluation."""


def evaluates_here(trainer) -> bool:
    """Whether this training process evaluates its run: ``eval.enabled`` and
    ``eval.in_process``, one plain process (a sharded or multi-process model is evaluated by
    a separate process), weights that are not broken."""
    ev, acc = trainer.cfg.eval, trainer.acc
    return (ev.enabled and ev.in_process and acc.num_processes == 1
            and acc.distributed_type.value == "NO"
            and not getattr(trainer, "weights_broken", False))


def evaluate_in_process(trainer) -> bool:
    """Evaluate the trained model without a second process or a reload; True when it ran.
    A failure is the evaluation's (eval/status.json), never the run's; a cancel request
    (CANCEL file, SIGTERM) stops it."""
    if not evaluates_here(trainer):
        return False
    import gc

    import torch

    from sga_core.evaluation.run import evaluate_run

    trainer.opt = trainer.reference = None  # free the optimizer state and any reference copy
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    model = trainer.acc.unwrap_model(trainer.model, keep_fp32_wrapper=False).eval()
    model.config.use_cache = True  # generation wants the KV cache
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.use_cache = True
    last = {"t": 0.0}

    def progress(stage: str, done: int, total: int) -> None:
        if trainer._sigterm or (trainer.run_dir / CANCEL_FILE).exists() or \
                trainer.caller_gone():
            raise EvalStopped("cancelled by request")
        now = time.monotonic()
        if now - last["t"] >= 5.0 or done >= total:
            last["t"] = now
            trainer.log(f"eval: {stage} {done}/{total}")

    trainer.log("evaluating in the training process (eval.in_process)")
    t0 = time.time()
    try:
        evaluate_run(trainer.run_dir, progress, loaded=(model, trainer.tok),
                     overrides={"device": str(trainer.acc.device)})
        trainer.log(f"evaluation completed ({time.time() - t0:.1f}s)")
    except Exception as exc:  # recorded in eval/status.json by evaluate_run
        trainer.log(f"evaluation failed: {type(exc).__name__}: {exc}")
    return True
