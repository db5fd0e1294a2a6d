"""Relearning attacks (docs/stress-tests.md#relearning): fine-tune a copy of the unlearned
model for a few steps and re-score the forget rows it did not see.

- ``relearn``: per seed, a share of the forget rows (default 10%, at least one, never all)
  is drawn; a copy is fine-tuned on them (plain next-token loss on the answers, AdamW)
  and the REST of the forget set is re-scored after each of the step counts (default 10
  and 50, one trajectory). Hu et al., "Unlearning or Obfuscating? Jogging the Memory of
  Unlearned LLMs via Benign Relearning" (ICLR 2025); Łucki et al. 2024.
- ``benign``: the same, trained on retain rows (as many as the forget share, drawn per
  seed) or on a text the user gives (``--benign-text``, one paragraph per training row);
  every forget row is re-scored, since none was trained on.

The run's own model is never touched: the copy lives in memory and is dropped, or with
``--keep`` saved under ``stress/kept/<attack>-seed<seed>/``.
"""

from __future__ import annotations

from pathlib import Path

from sga_core.stress.base import Attack, Case, StressContext, seeded_rows

DEFAULT_LR = 1e-5


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


class _Relearn(Attack):
    def keys(self, settings) -> list[str]:
        return [f"{self.name}-{n}" for n in sorted(set(settings.relearn_steps))]

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


class Relearn(_Relearn):
    name = "relearn"
    label = "relearning"
    description = ("a copy fine-tuned for N steps on a share of the forget rows; the rest "
                   "re-scored")
    rank = 10

    def training_rows(self, ctx, seed):
        n = len(ctx.forget_rows)
        used = seeded_rows(n, ctx.settings.relearn_share, seed)
        seqs = [ctx.train_seq(ctx.forget_rows[i]) for i in used]
        rest = [i for i in range(n) if i not in set(used)]
        return "forget", used, seqs, rest


class Benign(_Relearn):
    name = "benign"
    label = "benign relearning"
    description = ("a copy fine-tuned for N steps on retain rows (or --benign-text); every "
                   "forget row re-scored")
    rank = 20

    def training_rows(self, ctx, seed):
        import random

        n = len(ctx.forget_rows)
        k = max(1, round(ctx.settings.relearn_share * n))
        if ctx.settings.benign_text:
            paras = benign_paragraphs(ctx.settings.benign_text)
            used = sorted(random.Random(seed).sample(range(len(paras)), min(k, len(paras))))
            seqs = [ctx.enc.text("", paras[i]) for i in used]
            return "text", used, seqs, list(range(n))
        if not ctx.retain_rows:
            raise ValueError("benign relearning needs retain rows or --benign-text")
        used = sorted(random.Random(seed).sample(range(len(ctx.retain_rows)),
                                                 min(k, len(ctx.retain_rows))))
        seqs = [ctx.train_seq(ctx.retain_rows[i]) for i in used]
        return "retain", used, seqs, list(range(n))


def benign_paragraphs(path: str) -> list[str]:
    """The paragraphs (blank-line separated) of a text file, each one training row."""
    from sga_core.params import ConfigError

    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--benign-text {path}: {getattr(exc, 'strerror', None) or exc}") \
            from None
    paras = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    if not paras:
        raise ConfigError(f"--benign-text {path}: the file has no text")
    return paras
