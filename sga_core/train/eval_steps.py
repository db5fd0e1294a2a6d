"""Evaluation during training: every ``training.eval_every`` steps (and at step 0 and the last
step) a cheap subset of the QA metrics, one line per evaluation in ``eval_steps.jsonl``:

- forget and retain probability and truth-ratio score (candidate answers scored, no
  generation) on evenly spaced subsets (``eval_forget_rows``, 0 = all forget rows;
  ``eval_retain_rows``);
- Forget Quality against the retain reference's forget truth ratios, read from the
  reference's own summary or cache (:func:`sga_core.evaluation.reference.cached_value`):
  no second model is loaded into the training process. With all forget rows it is the
  final evaluation's definition; on a subset, the KS test of those rows;
- ROUGE-L recall of greedy answers on the first ``eval_rouge_rows`` forget and retain rows
  of those subsets.

Each metric is computed by its catalog entry (:mod:`sga_core.metrics.catalog`), so the
definitions are the final evaluation's. The best step by ``eval_metric`` (its catalog
direction; ties keep the earliest) is marked in the file and in status.json
(``best_step``); with ``keep_best`` its model is saved into ``best_model/``.

The training is unchanged by it: the model is put back in training mode and the random
number generators are restored after each evaluation. With several processes every process
evaluates the same rows (so sharded models run the same forwards); greedy ROUGE is skipped
with DeepSpeed and FSDP, where generation would need every shard.
"""

from __future__ import annotations

import time

from sga_core.config import STEP_METRICS
from sga_core.evaluation.common import retain_subset
from sga_core.evaluation.reference import NO_REFERENCE
from sga_core.fileio import append_jsonl
from sga_core.metrics.catalog import HIGHER, LOWER, QA, metrics_for, spec_of
from sga_core.metrics.context import MetricInputs, SetData
from sga_core.runs.folder import BEST_MODEL_DIR, EVAL_STEPS
from sga_core.train import trackers

EVAL_STEPS_FILE = EVAL_STEPS  # RunFolder's name
BEST_MODEL = BEST_MODEL_DIR
SHARDED = ("DEEPSPEED", "FSDP")


def reference_truth_ratios(cfg, forget_rows: list[dict]) -> tuple[list | None, str | None]:
    """The reference's forget truth ratios from its summary or cache: (values, None), or
    (None, why not)."""
    from sga_core.evaluation.reference import cached_value, forget_rows_key, resolve_reference

    ref = resolve_reference(cfg.eval.reference)
    if ref is None:
        return None, NO_REFERENCE
    if ref.problem:
        return None, ref.problem
    key = forget_rows_key(forget_rows, cfg.training.max_length, cfg.training.system_prompt)
    value = cached_value(ref, "forget_truth_ratios", key)
    if value is None or len(value) != len(forget_rows):
        return None, ("the reference's forget truth ratios are not cached for these rows "
                      "(evaluate the reference once: python -m sga_core eval REFERENCE); "
                      "training never loads a second model for them")
    return value, None


class StepEval:
    """The evaluations of one training run (built by :meth:`create`)."""

    def __init__(self, trainer):
        t = trainer.cfg.training
        self.trainer = trainer
        self.every = t.eval_every
        data = trainer.data
        self.forget_idx = retain_subset(len(data.forget), t.eval_forget_rows)
        self.retain_idx = retain_subset(len(data.retain), t.eval_retain_rows)
        self.rouge_n = t.eval_rouge_rows
        ref, self.ref_reason = reference_truth_ratios(trainer.cfg, data.forget)
        self.ref_tr = [ref[i] for i in self.forget_idx] if ref is not None else None
        self.metric = t.eval_metric
        self.direction = spec_of(self.metric, QA).direction
        self.keep_best = t.keep_best
        self.best: dict | None = None
        self.done: set[int] = set()
        self.spent = 0.0  # seconds spent evaluating so far
        self.sharded = trainer.acc.distributed_type.value in SHARDED

    @classmethod
    def create(cls, trainer) -> StepEval | None:
        """The run's evaluator, or None when ``eval_every`` is 0 or the data is not QA."""
        if not trainer.cfg.training.eval_every:
            return None
        if trainer.data.kind != "qa":
            trainer.log("evaluation during training: QA data only; off for text data")
            return None
        return cls(trainer)

    def state_dict(self) -> dict:
        """The record a checkpoint keeps: the best step so far, the steps evaluated, the
        time spent evaluating."""
        return {"best": self.best, "done": sorted(self.done), "spent": self.spent}

    def load_state_dict(self, state: dict) -> None:
        self.best = state.get("best")
        self.done = set(state.get("done") or ())
        self.spent = float(state.get("spent") or 0.0)

    def due(self, step: int, last: bool = False) -> bool:
        return step not in self.done and (step == 0 or last or step % self.every == 0)

    # ----------------------------------------------------------------------------------------
    def _scores(self, rows: list[dict]) -> list[dict]:
        from sga_core.evaluation.inputs import score_qa_candidates

        tr = self.trainer
        return score_qa_candidates(tr.model, tr.enc, rows, tr.acc.device,
                                   batch_size=tr.cfg.eval.batch_size)

    def _answers(self, rows: list[dict]) -> list[str]:
        from sga_core.evaluation.inputs import generate_answers

        tr = self.trainer
        model = tr.acc.unwrap_model(tr.model)
        was_training = model.training
        # training turns the KV cache off (and a model saved by a run keeps that in its
        # generation config); greedy answers want it, as the final evaluation does
        gen = getattr(model, "generation_config", None)
        cache = (model.config.use_cache, getattr(gen, "use_cache", None))
        model.config.use_cache = True
        if gen is not None:
            gen.use_cache = True
        try:
            return generate_answers(model, tr.enc, [r["question"] for r in rows],
                                    tr.cfg.eval.max_new_tokens, "qa", tr.acc.device,
                                    tr.cfg.eval.batch_size)
        finally:
            model.config.use_cache = cache[0]
            if gen is not None:
                gen.use_cache = cache[1]
            model.train(was_training)

    def measure(self) -> dict:
        """The metrics of the current model: {name: value} and {name: reason}."""
        data = self.trainer.data
        sets = {"forget": SetData("forget", [data.forget[i] for i in self.forget_idx],
                                  list(self.forget_idx)),
                "retain": SetData("retain", [data.retain[i] for i in self.retain_idx],
                                  list(self.retain_idx))}
        for d in sets.values():
            d.nlls = self._scores(d.rows) if d.rows else None
        rouge = {}
        if self.rouge_n and not self.sharded:
            for name, d in sets.items():
                rows = d.rows[:self.rouge_n]
                if rows:
                    rouge[name] = SetData(name, rows, d.indices[:self.rouge_n],
                                          generated=self._answers(rows),
                                          gold=[r["answer"] for r in rows])
        results, values, reasons = {}, {}, {}
        for name in [s.name for s in metrics_for(QA) if s.name in STEP_METRICS]:
            set_name = name.split("_")[0]
            spec = spec_of(name, QA)
            source = rouge if name.endswith("_rouge") else sets
            if set_name not in source or not source[set_name].rows:
                why = ("greedy ROUGE is off (eval_rouge_rows 0)" if not self.rouge_n else
                       "not with DeepSpeed/FSDP (generation needs every shard)"
                       if self.sharded and name.endswith("_rouge") else f"no {set_name} rows")
                values[name], reasons[name] = None, why
                continue
            res = spec.compute(MetricInputs(name, source, (set_name,), results, self.ref_tr,
                                            self.ref_reason))
            results[name] = res
            values[name] = res.value
            if res.value is None:
                reasons[name] = res.reason
        return {"values": values, "reasons": reasons}

    def run(self, step: int, train_elapsed: float) -> dict:
        """Evaluate now (every process), record it (the main process), track the best."""
        import torch

        tr = self.trainer
        t0 = time.time()
        cpu_rng = torch.get_rng_state()
        cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
        try:
            out = self.measure()
        finally:
            torch.set_rng_state(cpu_rng)
            if cuda_rng is not None:
                torch.cuda.set_rng_state_all(cuda_rng)
            tr.model.train()
        self.done.add(step)
        eval_s = time.time() - t0
        value = out["values"].get(self.metric)
        improved = value is not None and (self.best is None or self._better(value,
                                                                            self.best["value"]))
        if improved:
            self.best = {"step": step, "metric": self.metric, "value": value}
        rec = {"step": step, "epoch": round(step / tr.steps_per_epoch, 4),
               "train_elapsed_s": round(train_elapsed - self.spent, 3),
               "eval_s": round(eval_s, 3),
               "forget_rows": len(self.forget_idx), "retain_rows": len(self.retain_idx),
               "rouge_rows": min(self.rouge_n, len(self.forget_idx)),
               **out["values"], "reasons": out["reasons"], "best": improved}
        if tr.acc.is_main_process:
            append_jsonl(tr.run_dir / EVAL_STEPS_FILE, rec)
        trackers.log_eval(tr.acc, tr.cfg, step, out["values"])
        self.spent += eval_s
        if improved:
            if self.keep_best:
                tr.save_model(BEST_MODEL)
            tr.status(best_step=step, best_metric=self.metric, best_value=value,
                      best_model=BEST_MODEL if self.keep_best else None)
        tr.log(f"eval at step {step} ({rec['eval_s']:.1f}s): " + " ".join(
            f"{k}={v:.4g}" for k, v in out["values"].items() if v is not None)
            + (f"  best {self.metric} so far" if improved else ""))
        return rec

    def _better(self, a: float, b: float) -> bool:
        if self.direction == HIGHER:
            return a > b
        if self.direction == LOWER:
            return a < b
        return abs(a) < abs(b)
