"""Relearning, what the relearning attacks share (docs/stress-tests.md#relearning):
fine-tune a copy of the unlearned model for a few steps and re-score the forget rows it did
not see. Each attack (:mod:`sga_core.stress.attacks`) subclasses :class:`Relearning` and
says which rows it trains on (:meth:`Relearning.training_rows`); the settings here
(:class:`RelearnSettings`) are theirs.

Hu et al., "Unlearning or Obfuscating? Jogging the Memory of Unlearned LLMs via Benign
Relearning" (ICLR 2025); Łucki et al. 2024. The run's own model is never touched: the copy
lives in memory and is dropped, or with ``--keep`` saved under
``stress/kept/<attack>-seed<seed>/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sga_core.params import param
from sga_core.stress.base import Attack, Case, list_problem
from sga_core.stress.context import StressContext

#: a step count is one trajectory's length; a learning rate above 1 only turns the weights
#: into NaN
MAX_RELEARN_STEPS = 100_000
MAX_LR = 1.0
DEFAULT_LR = 1e-5


@dataclass
class RelearnSettings:
    """The relearning attacks' settings."""

    relearn_steps: list[int] = param([10, 50], "Relearning: optimizer steps after which the "
                                     "forget rows are re-scored (one trajectory; each 1 to "
                                     f"{MAX_RELEARN_STEPS}).")
    relearn_share: float = param(0.1, "Relearning: share of the forget rows trained on "
                                 "(at least 1, never all).", min=0.0, max=1.0)
    relearn_lr: float | None = param(None, "Relearning learning rate (default: the run's "
                                     "training lr, else 1e-5).", min=0.0, max=MAX_LR)
    relearn_batch_size: int = param(4, "Relearning: rows per step.", min=1, max=4096)
    keep: bool = param(False, "Keep the relearned copies under stress/kept/ (else deleted).")


class Diverged(ArithmeticError):
    """Relearning's loss stopped being a number at ``step`` (the learning rate is too high
    for this model): the steps from there on have no scores, only this reason."""

    def __init__(self, step: int, lr: float):
        self.step = step
        super().__init__(f"relearning diverged at step {step}: the loss is not a number "
                         f"(NaN or infinite) with learning rate {lr:g}; lower --relearn-lr")


def relearn_copy(ctx: StressContext, seqs: list, steps: list[int], lr: float, seed: int,
                 on_step, batch_size: int = 4):
    """Fine-tune a deep copy of ``ctx.model`` on the token sequences ``seqs`` (cycled in
    batches of ``batch_size``, order fixed by ``seed``) for ``max(steps)`` optimizer steps,
    calling ``on_step(step, model)`` after each step in ``steps``; returns the copy."""
    import copy
    import random

    import torch

    from sga_core.model.encoding import collate

    torch.manual_seed(seed)
    model = copy.deepcopy(ctx.model)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        for p in model.parameters():
            p.requires_grad_(True)
        params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    order = list(range(len(seqs)))
    random.Random(seed).shuffle(order)
    bs = max(1, min(batch_size, len(seqs)))
    pos = 0
    last = max(steps)
    for step in range(1, last + 1):
        idx = [order[(pos + j) % len(order)] for j in range(bs)]
        pos = (pos + bs) % len(order)
        batch = {k: v.to(ctx.device) for k, v in
                 collate([seqs[i] for i in idx], ctx.enc.pad_id).items()}
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    labels=batch["labels"], use_cache=False)
        if not torch.isfinite(out.loss.detach()).all():
            raise Diverged(step, lr)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        ctx.report("relearning: training", step, last)
        if step in steps:
            model.eval()
            on_step(step, model)
            model.train()
    model.eval()
    return model


def _keep(ctx: StressContext, model, name: str) -> None:
    """Save a relearned copy (``--keep``), atomically, with the tokenizer."""
    from sga_core.fileio import atomic_dir

    if not ctx.settings.keep or ctx.keep_dir is None:
        return
    target = Path(ctx.keep_dir) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_dir(target) as tmp:
        model.save_pretrained(tmp)
        ctx.enc.tok.save_pretrained(tmp)


class Relearning(Attack):
    """A relearning attack: one result key per step count, ``<name>-<steps>``."""

    Settings = RelearnSettings

    @classmethod
    def keys(cls, settings) -> list[str]:
        return [f"{cls.name}-{n}" for n in sorted(set(settings.relearn_steps))]

    @classmethod
    def owns(cls, key: str) -> bool:
        head, _, steps = key.rpartition("-")
        return head == cls.name and steps.isdigit()

    @classmethod
    def key_order(cls, key: str) -> int:
        return int(key.rpartition("-")[2])

    @classmethod
    def settings_problem(cls, settings) -> str | None:
        return list_problem("relearn_steps", settings.relearn_steps, 1, MAX_RELEARN_STEPS, 20)

    def training_rows(self, ctx: StressContext, seed: int) -> tuple[str, list[int], list, list]:
        """``(attack set, its rows used, token sequences, forget rows evaluated)``."""
        raise NotImplementedError

    def run(self, ctx: StressContext) -> dict[str, list[Case]]:
        from sga_core.evaluation.common import free_memory

        st = ctx.settings
        steps = sorted({int(n) for n in st.relearn_steps})
        if not steps or steps[0] < 1:
            raise ValueError(f"relearning steps must be positive, got {list(st.relearn_steps)}")
        lr = st.relearn_lr or ctx.train_lr or DEFAULT_LR
        out: dict[str, list[Case]] = {f"{self.name}-{n}": [] for n in steps}
        for seed in st.seeds:
            attack_set, used, seqs, evaluated = self.training_rows(ctx, seed)
            if set(evaluated) & set(used) and attack_set == "forget":
                raise AssertionError("relearning rows overlap the evaluated rows")

            def on_step(step, model, seed=seed, attack_set=attack_set, used=used,
                        evaluated=evaluated):
                scores = ctx.score(model, evaluated, stage=f"{self.name}-{step} seed {seed}")
                out[f"{self.name}-{step}"].append(Case(
                    f"seed {seed}", seed, list(evaluated), scores, list(used), attack_set))

            try:
                model = relearn_copy(ctx, seqs, steps, lr, seed, on_step,
                                     st.relearn_batch_size)
            except Diverged as exc:  # the steps not reached say why, per seed
                for n in steps:
                    if n >= exc.step:
                        out[f"{self.name}-{n}"].append(Case(
                            f"seed {seed}", seed, [], [], list(used), attack_set,
                            reason=str(exc)))
                free_memory()
                continue
            try:
                _keep(ctx, model, f"{self.name}-seed{seed}")
            finally:
                del model
                free_memory()
        return out
