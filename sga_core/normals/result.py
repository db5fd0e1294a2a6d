"""What a normal-answer backend returns: the table, per-row errors, tokens used, details."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sga_core.data import NormalTable

Progress = Callable[[int, int], None]


def _zero_tokens() -> dict[str, int]:
    return {"prompt": 0, "completion": 0, "total": 0}


@dataclass
class GenerationResult:
    """What a backend produced.

    ``table`` holds only the rows that succeeded; ``errors`` maps a forget index to why its row
    failed (never containing an API key); ``tokens`` counts what an API reported as used;
    ``details`` lists per-answer extras (retrieval: ``forget_index``, ``k``,
    ``retain_index``, ``score`` of every retrieved answer).
    """

    backend: str
    table: NormalTable
    num_forget: int
    errors: dict[int, str] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=_zero_tokens)
    details: list[dict[str, Any]] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.errors and self.table.is_complete(self.num_forget)

    def counts_by_source(self) -> dict[str, int]:
        return dict(sorted(Counter(a.source for a in self.table.answers).items()))

    def summary(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "forget_rows": self.num_forget,
            "answers": len(self.table),
            "by_source": self.counts_by_source(),
            "failed_rows": len(self.errors),
            "tokens": dict(self.tokens),
            "elapsed_s": round(self.elapsed_s, 3),
        }

    def summary_lines(self) -> list[str]:
        """A short human-readable summary (for the command line)."""
        s = self.summary()
        sources = ", ".join(f"{k}: {v}" for k, v in s["by_source"].items()) or "none"
        lines = [
            f"{s['answers']} normal answers for {s['forget_rows']} forget rows "
            f"(K-1={self.table.k - 1} each) from backend {self.backend} in "
            f"{self.elapsed_s:.1f} s",
            f"by source: {sources}",
        ]
        if self.backend == "retrieval":
            scores = [d["score"] for d in self.details if d.get("score") is not None]
            if scores:
                lines.append(f"retrieved {len(scores)}: cosine {min(scores):.3f} .. "
                             f"{max(scores):.3f} (mean {sum(scores) / len(scores):.3f})")
        if any(self.tokens.values()):
            t = self.tokens
            lines.append(f"tokens: prompt {t['prompt']}, completion {t['completion']}, "
                         f"total {t['total']}")
        if self.errors:
            lines.append(f"{len(self.errors)} forget rows failed:")
            lines += [f"  row {i}: {msg}" for i, msg in sorted(self.errors.items())]
        return lines
