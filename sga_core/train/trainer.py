"""The training loop behind ``accelerate launch -m sga_core.train``.

Written for several processes from the start: every process builds the same global batches
(same seed; :mod:`sga_core.train.batches` builds and orders them), takes its share of each,
and the loss is scaled so that data-parallel gradient averaging gives exactly the gradient of
the mean loss over the global batch. Only the main process writes files. Works unchanged with
DDP, DeepSpeed and FSDP accelerate configs.
"""

from __future__ import annotations

import functools
import math
import os
import signal
import time
import traceback
from itertools import islice
from pathlib import Path

from sga_core.config import TrainConfig
from sga_core.fileio import append_jsonl, atomic_dir, non_finite_as_text, now_iso
from sga_core.methods import StopTraining, Unit, get_method
from sga_core.methods.base import flatten
from sga_core.model.encoding import Encoder
from sga_core.model.forward import forward_stats
from sga_core.runs import checkpoints as ckpts
from sga_core.runs import status as run_status
from sga_core.runs.folder import (
    CANCEL_FILE,
    EVAL_STEPS,
    METRICS,
    MODEL_DIR,
    PROBES,
    TENSORBOARD_DIR,
    RunFolder,
)
from sga_core.runs.procs import caller_gone, foreground_caller
from sga_core.text import plural
from sga_core.train import trackers
from sga_core.train.batches import (
    batches_from,
    load_method_data,
    make_batches,  # noqa: F401  (re-exported: the data-order tests import it from here)
    micro_batches,
    shard,
    steps_per_epoch,
)
from sga_core.train.eval_steps import StepEval
from sga_core.train.order import dropout_note, set_order_lengths

# ----------------------------------------------------------------------------- probes -------

def probe_records(model, enc: Encoder, units_by_index: dict[int, Unit], rows: list[int],
                  device, step: int, top_k: int = 5) -> list[dict]:
    """Per-token probability of each probe row's forget answer (plus top-k alternatives)."""
    from sga_core.model.forward import token_records

    seqs = [units_by_index[i].seqs[0] for i in rows if i in units_by_index]
    records = []
    for s, rec in zip(seqs, token_records(model, enc, seqs, device, top_k) if seqs else []):
        index = s.meta.get("forget_index", s.meta.get("row_index"))
        records.append({"step": step, "sample_id": f"forget-{index}", "forget_index": index,
                        **rec})
    return records


# ------------------------------------------------------------------------------ loop --------

#: the signals that save a checkpoint and stop the run at the next step boundary (SLURM
#: sends SIGUSR1 before a time limit when asked to: docs/long-runs.md)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


class Trainer:
    def __init__(self, cfg: TrainConfig, run_dir: str | os.PathLike, resume: bool = False):
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.resume = resume  # continue from the newest checkpoint, if there is one
        self._sigterm = False  # a stop signal arrived
        self._caller: dict | None = None
        self.stopped_at: int | None = None  # the step of the checkpoint a signal saved
        self.exit_code = 0

    # -- helpers --------------------------------------------------------------------------
    @functools.cached_property
    def data_hashes(self) -> dict[str, str]:
        """The rows hash of each data file, as the run folder's manifest records them: what
        a checkpoint says it trained on (computed at a resume or the first save)."""
        from sga_core.runs.create import data_hashes

        return data_hashes(self.cfg)

    def log(self, msg: str) -> None:
        if self.acc.is_main_process:
            print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    def status(self, state=None, **fields) -> None:
        if self.acc.is_main_process:
            run_status.write_run(self.run_dir, state, **fields)

    def _on_signal(self, signum, frame) -> None:
        self._sigterm = True

    def setup(self) -> None:
        import torch
        from accelerate import Accelerator
        from accelerate.utils import set_seed

        from sga_core.model.device import resolve
        from sga_core.model.loading import load_model, load_tokenizer

        cfg, t, la = self.cfg, self.cfg.training, self.cfg.launch
        # the device is decided here, on the machine that runs the command (model/device.py)
        self.device_choice = resolve(la.device, la.mixed_precision, config_file=la.config_file)
        # where a resume continues: the newest complete checkpoint (None: from step 0),
        # checked against the config before anything of the run is changed
        self.resume_from = (ckpts.check_resume(self.run_dir, cfg, None, self.data_hashes)
                            if self.resume else None)
        ckpts.check_tensorboard_dir(self.run_dir, cfg)
        self.acc = Accelerator(cpu=self.device_choice.use_cpu,
                               mixed_precision=self.device_choice.mixed_precision,
                               gradient_accumulation_steps=t.grad_accum)
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._on_signal)
        set_seed(t.seed)
        # keep the launcher's start time (the run started when its process was launched)
        prev = run_status.read_run(self.run_dir) if self.acc.is_main_process else {}
        started = prev.get("started_at") if prev.get("state") == "running" else None
        again = {"ended_at": None, "exit_code": None, "traceback": None,
                 "stopped_at_checkpoint": None}
        self._resumes = int(prev.get("resumes") or 0) + 1  # recorded once the load worked
        self.status("running", pid=os.getpid(), started_at=started or now_iso(),
                    num_processes=self.acc.num_processes, error=None, **again)
        self.log(f"run {cfg.run_id}: method={cfg.method} args={cfg.method_args} "
                 f"processes={self.acc.num_processes} device={self.acc.device} "
                 f"mixed_precision={self.acc.mixed_precision} "
                 f"({self.device_choice.why})")
        if self.acc.is_main_process:
            from sga_core.runs.envrecord import write_env_record

            write_env_record(self.run_dir, t.seed, device=str(self.acc.device),
                             mixed_precision=self.acc.mixed_precision,
                             num_processes=self.acc.num_processes,
                             distributed_type=self.acc.distributed_type.value,
                             device_setting=la.device, lora_rank=t.lora_rank)
        method_cls = get_method(cfg.method)
        self.method = method_cls(cfg.method_config())
        self.nll_names = method_cls.log_names(cfg.method_args or {})
        self.method.check_training(t, self.acc.distributed_type.value)
        # the accelerate launcher: training stops if it dies (started directly, the trainer
        # is its own launcher: runs.command.start_argv)
        self._ppid = None if os.environ.get("SGA_TRAIN_DIRECT") else os.getppid()
        # a foreground caller (runs.launch.start(foreground=True)): its end cancels the run
        self._caller = foreground_caller()
        self.tok = load_tokenizer(cfg.model)
        self.enc = Encoder(self.tok, max_length=t.max_length, system_prompt=t.system_prompt)
        self.data = data = load_method_data(cfg)
        self.units = self.method.build_units(data, self.enc)
        set_order_lengths(self.units, method_cls, data, self.enc)
        self.units_by_index = {u.index: u for u in self.units}
        from sga_core.model.lora import for_training
        from sga_core.model.wrapper import refuse_training
        from sga_core.train.reference import for_method

        refuse_training(cfg.model)  # a two-model wrapper (WHP) is evaluated, never trained
        # gradient checkpointing and LoRA adapters, when asked (training.*)
        from sga_core.model.lora import CHECKPOINT_TOKENS, micro_batch_tokens

        big = micro_batch_tokens(self.units, t.batch_size, t.grad_accum)
        if big > CHECKPOINT_TOKENS and not t.gradient_checkpointing:
            self.log(f"gradient checkpointing on: a micro-batch holds up to {big} tokens "
                     f"(over {CHECKPOINT_TOKENS}), whose activations would not fit in memory")
        self.model = for_training(load_model(cfg.model, dtype=t.dtype), t, big)
        note = dropout_note(self.model.config)
        if note:
            self.log(note)
        # the starting model for methods that compare with it, made before the optimizer:
        # a method's attach() may hook both models and freeze parameters (RMU)
        self.reference = for_method(method_cls, self.acc, self.model, cfg)
        self.method.attach(self.model, self.reference.model if self.reference else None)
        n = len(self.units)
        self.steps_per_epoch = steps_per_epoch(n, t.batch_size)
        self.total_steps = t.max_steps or max(1, math.ceil(t.epochs * self.steps_per_epoch))
        opt = torch.optim.AdamW([p for p in self.model.parameters() if p.requires_grad],
                                lr=t.lr, weight_decay=t.weight_decay)
        from sga_core.train.schedule import make_scheduler

        sched = make_scheduler(opt, t.scheduler, t.warmup_steps, self.total_steps)
        # the scheduler is stepped by hand once per optimizer step (not prepared), so its
        # counting does not depend on the number of processes
        self.model, self.opt = self.acc.prepare(self.model, opt)
        self.sched = sched
        from sga_core.model.fusedloss import for_run

        # the fused loss, if any
        self.loss_fn = for_run(t.fused_loss, self.acc, self.model)
        self.probe_rows = list(t.probe_rows) or [u.index for u in self.units[:t.probe_count]]
        self.probe_rows = [i for i in self.probe_rows if i in self.units_by_index]
        self.status(total_steps=self.total_steps, steps_per_epoch=self.steps_per_epoch,
                    n_units=n, **({} if self.resume_from else {"step": 0}))
        self.step_eval = StepEval.create(self)  # evaluation during training, or None
        from sga_core.train.checkpoint import Checkpointer

        self.checkpointer = Checkpointer(self)
        self.log(f"{plural(n, 'sample')}, batch {t.batch_size}, "
                 f"{self.steps_per_epoch} steps/epoch, {plural(self.total_steps, 'step')}")

    def continue_from_checkpoint(self) -> dict | None:
        """On a resume: load the newest checkpoint (every part checked first), and only
        then cut the step logs back to its step (this process writes them), so each step
        keeps one line, and remove what a save cut short; None when there is no checkpoint
        (the run starts again from step 0, its logs emptied). A checkpoint that cannot be
        loaded is a ResumeError naming the file, with the logs and checkpoints untouched."""
        pos = None
        if self.resume_from is not None:
            step, folder = self.resume_from
            pos = self.checkpointer.load(step, folder)
            self.method.load_state_dict(pos.get("method") or {})
            if self.step_eval is not None and pos.get("step_eval"):
                self.step_eval.load_state_dict(pos["step_eval"])
        step = pos["step"] if pos is not None else -1
        if self.acc.is_main_process:
            for name in (METRICS, PROBES, EVAL_STEPS):
                ckpts.truncate_log(self.run_dir / name, step)
            # what a save cut short left (this process writes checkpoints/ from now on)
            ckpts.prune(self.run_dir, self.cfg.training.keep_checkpoints)
        if pos is None:
            self.log("resume: no checkpoint yet; starting from step 0")
            return None
        self.status(step=step, epoch=round(step / self.steps_per_epoch, 4),
                    resumes=self._resumes, resumed_at=now_iso(), resumed_from=step)
        self.log(f"resumed from the checkpoint at step {step}")
        return pos

    def save_checkpoint(self, step: int, elapsed: float) -> None:
        """Save a checkpoint of the state after ``step`` (sga_core.train.checkpoint)."""
        if self.checkpointer.saved_step == step:
            return
        ts = time.time()
        self.checkpointer.save(step, {
            "elapsed_s": elapsed, "method": self.method.state_dict(),
            "step_eval": self.step_eval.state_dict() if self.step_eval else None})
        self.status(checkpoint_step=step)
        self.log(f"checkpoint saved at step {step} ({time.time() - ts:.1f}s)")

    def write_probes(self, step: int) -> None:
        if not self.probe_rows:
            return
        self.model.eval()
        recs = probe_records(self.model, self.enc, self.units_by_index, self.probe_rows,
                             self.acc.device, step)
        self.model.train()
        if self.acc.is_main_process:
            for rec in recs:
                append_jsonl(self.run_dir / PROBES, rec)

    def data_nll(self, when: str = "before") -> dict:
        """Mean answer NLL over the forget rows and the retain rows (``training.nll_rows``
        of each, evenly spaced; 0 = all), sharded over processes: the before/after figures a
        researcher checks first. status.json names the stage ("measuring the NLL before
        training") with its rows done of all (``stage_done``/``stage_total``), so the Runs
        page shows it with an ETA rather than a step 0 that never moves."""
        import torch

        from sga_core.evaluation.common import retain_subset
        from sga_core.model.forward import rows_nll

        acc, out, limit = self.acc, {}, self.cfg.training.nll_rows
        sets = [(name, [rows[i] for i in retain_subset(len(rows), limit)])
                for name, rows in (("forget", self.data.forget), ("retain", self.data.retain))
                if rows]
        stage = f"measuring the NLL {when} training"
        total, done, last = sum(len(rows) for _, rows in sets), [0], [0.0]

        def counted(part) -> None:  # the main process's rows, times the processes
            done[0] += len(part) * acc.num_processes
            if time.monotonic() - last[0] >= 1.0:
                last[0] = time.monotonic()
                self.status(stage_done=min(done[0], total))

        self.status(stage=stage, stage_done=0, stage_total=total, stage_started_at=now_iso())
        self.log(f"{stage}: {plural(total, 'row')}")
        for name, rows in sets:
            # every process scores the same number of rows (padded with a repeat that is not
            # counted), so sharded models (ZeRO-3, FSDP) run the same number of forwards
            per = -(-len(rows) // acc.num_processes)
            mine = rows[acc.process_index::acc.num_processes]
            n_real = len(mine)
            mine = mine + [rows[0]] * (per - n_real)
            vals = rows_nll(self.model, self.enc, mine, self.data.kind, acc.device,
                            on_batch=counted)[:n_real]
            tot = acc.reduce(torch.tensor([sum(vals), n_real], dtype=torch.float64,
                                          device=acc.device), "sum")
            out[name] = tot[0].item() / max(tot[1].item(), 1)
        self.status(stage=None, stage_done=None, stage_total=None, stage_started_at=None)
        return out

    def caller_gone(self) -> bool:
        """Whether the foreground process that started this run has exited (SIGKILL gives
        it no chance to cancel the run itself)."""
        return caller_gone(self._caller)

    def stop_requests(self) -> tuple[bool, bool]:
        """(cancel, checkpoint-and-stop), agreed by every process: a cancel request (the
        CANCEL file, the foreground caller gone) wins over a stop signal, which saves a
        checkpoint first."""
        import torch

        cancel = float((self.run_dir / CANCEL_FILE).exists() or self.caller_gone())
        flags = self.acc.reduce(torch.tensor([cancel, float(self._sigterm)],
                                             device=self.acc.device), "sum")
        return bool(flags[0].item() > 0), bool(flags[1].item() > 0)

    def should_cancel(self) -> bool:
        return self.stop_requests()[0]

    def weights_finite(self) -> bool:
        import torch

        params = [p.detach() for p in self.trainable() if p.numel()]
        # one fused pass: a finite norm means every weight is finite (the per-parameter
        # isfinite().all() loop cost ~5% of a SmolLM2 step on CPU)
        norms = torch._foreach_norm(params) if params else []
        ok = torch.isfinite(torch.stack(norms)).all() if norms else torch.tensor(True)
        bad = self.acc.reduce((~ok).float().reshape(1).to(self.acc.device), "sum")
        return bool(bad.item() == 0)

    def trainable(self) -> list:
        """The parameters the optimizer updates (all, or the LoRA adapters)."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def grad_norm(self, max_norm: float) -> float | None:
        """The norm of the whole model's gradient for this step, clipped to ``max_norm`` when
        it is > 0 (0: measured only). accelerate's clip_grad_norm_ knows where each backend
        keeps the gradient: DDP's all-reduced ``.grad``, every FSDP shard (the model passed
        must be the prepared one, whose parameters accelerate recognises), DeepSpeed's engine
        (``get_global_grad_norm()``; the engine clips by its own ``gradient_clipping``).
        A sum over this process's ``.grad`` would see one shard, or nothing at all under
        ZeRO. None when the backend reports no norm (logged once)."""
        limit = max_norm if max_norm > 0 else math.inf  # inf: clip factor 1, no change
        norm = self.acc.clip_grad_norm_(self.model.parameters(), limit)
        if norm is None:
            if not getattr(self, "_no_norm_logged", False):
                self._no_norm_logged = True
                self.log(f"the {self.acc.distributed_type.value} backend reports no gradient "
                         "norm for this step; metrics.jsonl's grad_norm is null until it does")
            return None
        return float(norm)

    def apply_update(self, step_loss: float):
        """Clip, check and apply the gradients of one step; returns the gradient norm.
        Raises StopTraining('diverged') instead of applying a bad update."""
        import torch

        t = self.cfg.training
        if t.diverge_loss and abs(step_loss) > t.diverge_loss:
            # checked before the update, so the model kept is the last good one
            self.opt.zero_grad(set_to_none=True)
            raise StopTraining("diverged", f"|loss| {abs(step_loss):.3g} exceeded "
                                           f"diverge_loss {t.diverge_loss:g}")
        grad_norm = self.grad_norm(t.max_grad_norm)
        if grad_norm is not None and not math.isfinite(grad_norm):
            self.opt.zero_grad(set_to_none=True)
            raise StopTraining("diverged", "the gradient became non-finite")
        # a finite gradient can still give non-finite weights with reduced-precision weights
        # (AdamW on float16: eps underflows to 0), so those keep a copy to undo such an
        # update; float32 weights only pay for the check
        backup = ([p.detach().clone() for p in self.trainable()]
                  if t.dtype != "float32" else None)
        self.opt.step()
        if not self.weights_finite():
            self.opt.zero_grad(set_to_none=True)
            if backup is None:
                self.weights_broken = True
                raise StopTraining("diverged", "the update made the weights non-finite "
                                               "(NaN/inf); model not saved")
            with torch.no_grad():
                for p, b in zip(self.trainable(), backup):
                    p.copy_(b)
            raise StopTraining("diverged", "the update made the weights non-finite (NaN/inf);"
                                           " the weights before it are kept")
        del backup
        self.sched.step()
        self.opt.zero_grad(set_to_none=True)
        return grad_norm

    def local_part(self, batch: list[int]) -> list[int]:
        """This process's share of a global batch."""
        return shard(batch, self.acc.process_index, self.acc.num_processes)

    def train_step(self, batch: list[int]) -> dict:
        """One optimizer step over a global batch; returns the global step statistics."""
        import torch

        acc, t = self.acc, self.cfg.training
        world, rank = acc.num_processes, acc.process_index
        n_global = len(batch)
        tot = torch.zeros(8, dtype=torch.float64, device=acc.device)
        grad_norm = None
        micros = micro_batches(batch, t.grad_accum)
        # accelerate's accumulate() divides each backward by grad_accum; undo that for the
        # micro-batches we actually have, so the step gradient is that of the global mean
        scale = world * t.grad_accum / n_global
        for mb in micros:
            with acc.accumulate(self.model):
                local = shard(mb, rank, world)
                dummy = not local  # keep collectives in step: forward a unit with weight 0
                units = [self.units[i] for i in (local or mb[:1] or batch[:1])]
                seqs, ids = flatten(units)
                stats = forward_stats(self.model, seqs, ids, self.enc.pad_id, acc.device,
                                      keep_logits=self.method.needs_logits,
                                      loss_fn=self.loss_fn)
                if self.reference is not None:
                    stats.ref = self.reference.stats(seqs, ids, self.enc.pad_id, acc.device,
                                                     keep_logits=self.method.needs_logits)
                per_unit = self.method.unit_losses(stats, len(units))
                if dummy:
                    per_unit = per_unit * 0.0
                loss = per_unit.sum() * scale
                det = stats.mean_nll.detach()
                f_mask = self.method.role_mask(stats, "forget", "idk", "train")
                n_mask = self.method.role_mask(stats, "normal")
                r_mask = self.method.role_mask(stats, "retain")
                live = 0.0 if dummy else 1.0
                part = torch.stack([
                    per_unit.detach().sum().double() * live,
                    (det * f_mask).sum().double() * live, f_mask.sum().double() * live,
                    (det * n_mask).sum().double() * live, n_mask.sum().double() * live,
                    (det * r_mask).sum().double() * live, r_mask.sum().double() * live,
                    torch.tensor(float(sum(len(s) for s in seqs)), dtype=torch.float64,
                                 device=acc.device) * live,
                ])
                nonfinite = torch.tensor([0.0 if torch.isfinite(loss) else 1.0],
                                         device=acc.device)
                if acc.reduce(nonfinite, "sum").item() > 0:
                    raise StopTraining("diverged", "the loss became non-finite (NaN/inf)")
                tot += acc.reduce(part, "sum")
                acc.backward(loss)
                if acc.sync_gradients:
                    grad_norm = self.apply_update(tot[0].item() / n_global)
        vals = tot.tolist()
        out = {"loss": vals[0] / n_global,
               "forget_nll": vals[1] / vals[2] if vals[2] else None,
               "normal_nll": vals[3] / vals[4] if vals[4] else None,
               "retain_nll": vals[5] / vals[6] if vals[6] else None,
               "tokens": vals[7],
               "grad_norm": float(grad_norm) if grad_norm is not None else None}
        if t.diverge_loss and abs(out["loss"]) > t.diverge_loss:
            raise StopTraining("diverged", f"|loss| {abs(out['loss']):.3g} exceeded "
                                           f"diverge_loss {t.diverge_loss:g}")
        return out

    def save_model(self, name: str = MODEL_DIR) -> None:
        """Save the model being trained (and the tokenizer) into ``RUN_DIR/<name>``, built
        beside it and swapped in (:func:`~sga_core.fileio.atomic_dir`)."""
        acc = self.acc
        acc.wait_for_everyone()
        state_dict = acc.get_state_dict(self.model)
        lora = bool(self.cfg.training.lora_rank)
        if acc.is_main_process:
            target = self.run_dir / name
            with atomic_dir(target) as tmp:
                if lora:  # the adapter, naming its base model (sga_core.model.lora)
                    from sga_core.model.loading import resolve_model_path
                    from sga_core.model.lora import save_adapter

                    save_adapter(self.model, tmp, self.cfg.model,
                                 resolve_model_path(self.cfg.model), state_dict=state_dict)
                else:
                    acc.unwrap_model(self.model).save_pretrained(tmp, state_dict=state_dict,
                                                                  safe_serialization=True)
                self.tok.save_pretrained(tmp)
            if lora and self.cfg.training.save_merged:
                from sga_core.model.loading import merge_adapter

                self.log("saving the merged model")
                merge_adapter(target, RunFolder(self.run_dir).merged_model_dir,
                              self.cfg.training.dtype)
        acc.wait_for_everyone()

    def evaluate_steps(self, step: int, t0: float, last: bool = False) -> None:
        """Evaluation during training (sga_core.train.eval_steps), when it is due."""
        if self.step_eval is not None and self.step_eval.due(step, last):
            self.step_eval.run(step, time.time() - t0)

    def run(self) -> str:
        self.setup()
        t = self.cfg.training
        t0 = time.time()
        step, state, reason = 0, "completed", None
        pos = self.continue_from_checkpoint() if self.resume else None
        # the trackers start once the checkpoint is loaded: a resume purges TensorBoard's
        # events after its step only when it goes ahead
        trackers.start(self.acc, self.cfg, self.run_dir / TENSORBOARD_DIR,
                       pos["step"] if pos is not None else -1 if self.resume else None)
        if pos is not None:
            step = pos["step"]
            t0 -= float(pos.get("elapsed_s") or 0.0)
        else:
            self.write_probes(0)
            nll_before = self.data_nll("before") if t.eval_nll else {}
            if nll_before:
                self.status(nll_before=nll_before)
                self.log("answer NLL before: " + _fmt_nll(nll_before))
            self.evaluate_steps(0, t0)
        from sga_core.train import caller_watch

        caller_watch.stand_down()  # the loop checks the foreground caller from now on
        # the batches from the place in the data order where a resume continues
        batches = batches_from(self.units, t.batch_size, t.seed, step, t.group_by_length)
        try:
            for batch in islice(batches, max(0, self.total_steps - step)):
                cancel, signalled = self.stop_requests()
                if cancel:
                    raise StopTraining("cancelled", (
                        f"its foreground caller (pid {self._caller['pid']}) exited"
                        if self.caller_gone() else "cancelled by request"))
                if signalled:
                    self.save_checkpoint(step, time.time() - t0)
                    self.stopped_at = step
                    raise StopTraining("cancelled",
                                       f"stopped: checkpoint saved at step {step}")
                if self._ppid is not None and os.getppid() != self._ppid:
                    # the launcher is gone (killed): stop at once, and let the process
                    # that launched it record the end (never "failed" while training)
                    self.log("the launcher process exited; stopping")
                    os._exit(3)
                ts = time.time()
                out = self.method.step(self, batch, step) or self.train_step(batch)
                step += 1
                dt = time.time() - ts
                fields = self.method.log_fields()  # its r (SGA), its dual variable (PDU)
                rec = {"step": step, "epoch": round(step / self.steps_per_epoch, 4),
                       "loss": out["loss"], "forget_nll": out["forget_nll"],
                       "normal_nll": out["normal_nll"], "retain_nll": out["retain_nll"],
                       "r": fields.get("r"),
                       "r_star": out.get("r_star"), "lr": self.sched.get_last_lr()[0],
                       "grad_norm": out["grad_norm"],
                       "tokens_per_s": out["tokens"] / dt if dt > 0 else None,
                       "elapsed_s": round(time.time() - t0, 3),
                       "batch": [self.units[i].index for i in batch]}
                rec.update(fields)  # what the method logs of its own: PDU's retain_preference
                if step % t.log_every == 0 or step == self.total_steps:
                    if self.acc.is_main_process:
                        # a NaN is "NaN", never null (null: not logged)
                        append_jsonl(self.run_dir / METRICS, non_finite_as_text(rec))
                    trackers.log_step(self.acc, self.cfg, rec, tuple(fields))
                    self.status(step=step, epoch=rec["epoch"])
                    self.log(f"step {step}/{self.total_steps} loss={out['loss']:.4f} "
                             f"{_nll_text(out, self.nll_names)} "
                             f"tok/s={rec['tokens_per_s'] or 0:.0f}")
                if t.probe_every and step % t.probe_every == 0 and step < self.total_steps:
                    self.write_probes(step)
                self.evaluate_steps(step, t0, last=step == self.total_steps)
                if t.save_every and step % t.save_every == 0 and step < self.total_steps:
                    self.save_checkpoint(step, time.time() - t0)
        except StopTraining as stop:
            state, reason = stop.state, stop.reason
            self.log(f"stopping at step {step}: {reason}")
        if self.stopped_at is not None:  # a stop signal: the checkpoint is the run's state
            self.exit_code = ckpts.STOPPED_EXIT
            self.status(state, step=step, ended_at=now_iso(), exit_code=self.exit_code,
                        error=reason, stopped_at_checkpoint=step,
                        elapsed_s=round(time.time() - t0, 3))
            self.log(f"run stopped after {plural(step, 'step')}: resume it with "
                     f"`python -m sga_core train --resume {self.run_dir}`")
            self.acc.end_training()
            return state
        if state != "cancelled" and not getattr(self, "weights_broken", False):
            self.evaluate_steps(step, t0, last=True)
        saved = self.method.finish(self, state)  # Task Vector / WHP build their model here
        self.write_probes(step)
        if t.eval_nll:
            nll_after = self.data_nll("after")
            self.status(nll_after=nll_after)
            self.log("answer NLL after:  " + _fmt_nll(nll_after))
        if t.save_model and not saved and not getattr(self, "weights_broken", False):
            self.log("saving model")
            self.save_model()
        self.status(state, step=step, ended_at=now_iso(), exit_code=0,
                    error=None if state == "completed" else reason,
                    elapsed_s=round(time.time() - t0, 3))
        self.log(f"run {state} after {plural(step, 'step')} ({time.time() - t0:.1f}s)")
        if state == "completed":
            from sga_core.train.inprocess import evaluate_in_process

            if evaluate_in_process(self):  # when eval.in_process applies (one process)
                from sga_core.fileio import read_json

                trackers.log_summary(self.acc, self.cfg, step,
                                     read_json(RunFolder(self.run_dir).summary_path, default={}))
        self.acc.end_training()
        return state


def _fmt_nll(d: dict) -> str:
    return " ".join(f"{k}={v:.4f}" for k, v in d.items())


def _nll_text(out: dict, names: dict[str, str]) -> str:
    """The step's NLLs for train.log, each named by what was measured (``names``: the
    method's :meth:`log_names`); a renamed value takes the place of an empty one of that
    name (the retain reference's retain-row NLL is logged as retain_nll, not forget_nll)."""
    shown: dict[str, float | None] = {}
    for key in ("forget_nll", "normal_nll", "retain_nll"):
        name = names.get(key, key)
        if name not in shown or shown[name] is None:
            shown[name] = out.get(key)
    return " ".join(f"{k}={_fmt(v)}" for k, v in shown.items())


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.4f}"


def run_training(cfg: TrainConfig, run_dir: str | os.PathLike, resume: bool = False) -> str:
    """Train ``cfg`` into ``run_dir`` (``resume``: from its newest checkpoint); returns the
    final state. On an unexpected error the run is marked failed with the error text, and
    the error is re-raised."""
    return train(cfg, run_dir, resume).run_state


def train(cfg: TrainConfig, run_dir: str | os.PathLike, resume: bool = False) -> Trainer:
    """:func:`run_training`, returning the trainer (its ``run_state`` and ``exit_code``:
    :data:`~sga_core.runs.checkpoints.STOPPED_EXIT` after a stop signal's checkpoint)."""
    trainer = Trainer(cfg, run_dir, resume)
    try:
        trainer.run_state = trainer.run()
        return trainer
    except BaseException as exc:
        is_main = getattr(getattr(trainer, "acc", None), "is_main_process", True)
        if is_main:
            tb = traceback.format_exc()
            run_status.write_run(run_dir, "failed", ended_at=now_iso(), exit_code=1,
                                 error=f"{type(exc).__name__}: {exc}", traceback=tb[-4000:])
        raise
