"""The "I don't know" backend: K-1 distinct refusals per forget row from the shipped templates,
chosen deterministically from the seed."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from sga_core.data import NormalAnswer, NormalTable
from sga_core.normals.registry import register_backend
from sga_core.normals.result import GenerationResult, Progress


def idk_normals(num_forget: int, k: int, templates: list[str] | None = None,
                seed: int = 0) -> NormalTable:
    if templates is None:
        from sga_core.assets import idk_templates

        templates = idk_templates()
    if k - 1 > len(templates):
        raise ValueError(f"K-1={k - 1} distinct answers asked for, only {len(templates)} "
                         "templates available")
    rng = random.Random(seed)
    answers = []
    for i in range(num_forget):
        for j, text in enumerate(rng.sample(templates, k - 1), start=1):
            answers.append(NormalAnswer(forget_index=i, k=j, text=text, source="idk"))
    return NormalTable(answers, k)


# ------------------------------------------------------------------ registration ------------
@dataclass
class IdkConfig:
    """The "I don't know" backend has no settings (the seed picks the refusals)."""


@register_backend("idk", IdkConfig, rank=3,
                  description="K-1 distinct 'I don't know' refusals per row",
                  runtime_options=("seed", "idk_templates", "progress"))
def generate(forget_rows: list[dict[str, Any]], kind: str, k: int, *, seed: int = 0,
             idk_templates: list[str] | None = None,
             progress: Progress | None = None) -> GenerationResult:
    """K-1 distinct "I don't know" refusals per forget row, chosen by ``seed`` from the
    shipped templates (or ``idk_templates``)."""
    start = time.perf_counter()
    table = idk_normals(len(forget_rows), k, templates=idk_templates, seed=seed)
    if progress is not None:
        progress(len(forget_rows), len(forget_rows))
    return GenerationResult("idk", table, len(forget_rows),
                            elapsed_s=time.perf_counter() - start)
