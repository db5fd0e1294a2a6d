"""The "I don't know" backend: K-1 distinct refusals per forget row from the shipped templates,
chosen deterministically from the seed."""

from __future__ import annotations

import random

from sga_core.data import NormalAnswer, NormalTable


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
