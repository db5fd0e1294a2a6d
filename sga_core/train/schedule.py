"""Learning-rate schedules after warm-up: constant, linear and cosine, the exact formulas of
transformers' ``get_scheduler`` (constant_with_warmup, linear, cosine), on torch's LambdaLR.

Written out here because importing ``transformers.get_scheduler`` pulls in its Trainer
utilities, which import peft when it is installed: about 3 s of every run's start-up on an
idle 2-core machine for three one-line formulas (per-run fixed cost,
docs/decisions/002-in-process-evaluation.md).
"""

from __future__ import annotations

import math
from functools import partial

SCHEDULES = ("constant", "linear", "cosine")


def lr_factor(step: int, *, kind: str, warmup: int, total: int) -> float:
    """The multiplier of the base learning rate at optimizer step ``step``."""
    if kind == "constant":
        return float(step) / float(max(1.0, warmup)) if step < warmup else 1.0
    if step < warmup:
        return float(step) / float(max(1, warmup))
    if kind == "linear":
        return max(0.0, float(total - step) / float(max(1, total - warmup)))
    if kind == "cosine":
        progress = float(step - warmup) / float(max(1, total - warmup))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress)))
    raise ValueError(f"training.scheduler: {kind!r} is not one of {list(SCHEDULES)}")


def make_scheduler(optimizer, kind: str, warmup: int, total: int):
    from torch.optim.lr_scheduler import LambdaLR

    return LambdaLR(optimizer, partial(lr_factor, kind=kind, warmup=warmup, total=total))
