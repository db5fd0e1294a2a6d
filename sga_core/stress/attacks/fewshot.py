"""`--fewshot-k` (3) retain question-answer pairs, drawn per seed, before each forget
question in the one user turn. Question-answer data only: a passage has no question to put
them before. A few-shot recovery can be format, not memory (see
[Figures](../stress-tests.md#figures)): compare it with the Retained model's."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.params import param
from sga_core.stress.base import Attack, Case
from sga_core.stress.context import StressContext


@dataclass
class FewShotSettings:
    fewshot_k: int = param(3, "Few-shot: retain QA pairs before each question.", min=1,
                           max=64)


def fewshot_prefix(pairs: list[dict]) -> str:
    return "".join(f"Question: {p['question']}\nAnswer: {p['answer']}\n\n" for p in pairs)


class FewShot(Attack):
    name = "fewshot"
    label = "few-shot prefix"
    description = "k retain question-answer pairs before each forget question"
    rank = 50
    kinds = ("qa",)
    Settings = FewShotSettings

    def run(self, ctx: StressContext) -> dict[str, list[Case]]:
        import random

        if not ctx.retain_rows:
            return {self.name: [Case("", None, [], [], reason="not applicable: no retain "
                                     "rows to take the examples from")]}
        k = max(1, min(ctx.settings.fewshot_k, len(ctx.retain_rows)))
        rows = list(range(len(ctx.forget_rows)))
        cases = []
        for seed in ctx.settings.seeds:
            used = sorted(random.Random(seed).sample(range(len(ctx.retain_rows)), k))
            prefix = fewshot_prefix([ctx.retain_rows[i] for i in used])
            qs = [f"{prefix}Question: {ctx.forget_rows[i]['question']}" for i in rows]
            cases.append(Case(f"seed {seed}", seed, rows,
                              ctx.score(ctx.model, rows, qs, f"{self.name} seed {seed}"),
                              used, "retain", qs))
        return {self.name: cases}
