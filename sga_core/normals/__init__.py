"""Generating normal answers (SPEC 3). Each backend returns a NormalTable with K-1 answers per
forget row and its provenance.

One entry point serves the command line and the browser::

    result = generate_normals("retrieval", forget_rows, "qa", 4, retain_rows=retain_rows)
    result.table.save("normals.jsonl")

Backends (heavy libraries are imported only when one is used):

- ``retrieval``: answers of the most similar retain rows (sentence embeddings, the paper's
  TOFU recipe), "I don't know" templates where no neighbour is similar enough;
- ``openai``: a chat model behind an OpenAI-compatible API (the paper used GPT-4o-mini) with a
  prompt template from ``assets/prompts``;
- ``local``: the same templates answered by a local instruct model (offline);
- ``idk``: K-1 "I don't know" refusals per row.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sga_core.data import NormalTable

__all__ = [
    "BACKENDS",
    "BACKEND_DESCRIPTIONS",
    "GenerationResult",
    "Progress",
    "generate_normals",
]

Progress = Callable[[int, int], None]

BACKENDS = frozenset({"retrieval", "openai", "local", "idk"})
BACKEND_DESCRIPTIONS = {
    "retrieval": "answers of the most similar retain rows (sentence embeddings); "
                 "'I don't know' below the similarity threshold",
    "openai": "a chat model behind an OpenAI-compatible API, with a prompt template",
    "local": "a local instruct model (default: the embedded SmolLM2), with a prompt template",
    "idk": "K-1 distinct 'I don't know' refusals per row",
}

# the keyword options each backend accepts (beyond forget_rows, kind, k)
_OPTIONS = {
    "retrieval": {"retain_rows", "embedding_model", "threshold", "batch_size", "device",
                  "seed", "idk_templates", "progress"},
    "openai": {"template", "model", "base_url", "api_key", "temperature", "top_p",
               "max_tokens", "timeout", "max_retries", "retry_base_delay", "retry_max_delay",
               "max_concurrency", "use_n", "seed", "progress", "client"},
    "local": {"template", "model", "max_new_tokens", "temperature", "top_p", "seed",
              "batch_size", "device", "dtype", "max_prompt_tokens", "progress"},
    "idk": {"seed", "idk_templates", "progress"},
}


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


def _rows_and_kind(forget_rows: Any, kind: str | None) -> tuple[list[dict[str, Any]], str]:
    rows = getattr(forget_rows, "rows", forget_rows)  # a data.Dataset or a list of rows
    if kind in (None, "auto"):
        kind = getattr(forget_rows, "kind", None)
    if kind not in ("qa", "text"):
        raise ValueError(f"kind must be 'qa' or 'text', not {kind!r}")
    return list(rows), kind


def generate_normals(backend: str, forget_rows: Any, kind: str | None, k: int,
                     **options: Any) -> GenerationResult:
    """Generate K-1 normal answers per forget row with ``backend``.

    ``forget_rows`` is a list of validated rows (or a :class:`sga_core.data.Dataset`, whose
    kind is used when ``kind`` is None); ``k`` is K. ``options`` are the backend's keyword
    arguments (see ``retrieval_normals``, ``openai_normals``, ``local_normals``), all
    accepting ``progress=callable(done, total)``. Unknown options raise ``ValueError``.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown normals backend {backend!r}; choose one of "
                         f"{', '.join(sorted(BACKENDS))}")
    unknown = sorted(set(options) - _OPTIONS[backend])
    if unknown:
        raise ValueError(f"backend {backend!r} has no option {unknown[0]!r} (its options: "
                         f"{', '.join(sorted(_OPTIONS[backend]))})")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"K must be an integer >= 1, got {k!r}")
    rows, kind = _rows_and_kind(forget_rows, kind)
    options = {key: value for key, value in options.items() if value is not None}
    if backend == "retrieval":
        from sga_core.normals.retrieval import retrieval_normals

        if "retain_rows" not in options:
            raise ValueError("the retrieval backend needs retain_rows (the retain set)")
        retain = options.pop("retain_rows")
        retain_rows = getattr(retain, "rows", retain)
        return retrieval_normals(rows, retain_rows, kind, k, **options)
    if backend == "openai":
        from sga_core.normals.openai_backend import openai_normals

        return openai_normals(rows, kind, k, **options)
    if backend == "local":
        from sga_core.normals.local import local_normals

        return local_normals(rows, kind, k, **options)
    from sga_core.normals.idk import idk_normals

    start = time.perf_counter()
    progress = options.pop("progress", None)
    if "idk_templates" in options:
        options["templates"] = options.pop("idk_templates")
    table = idk_normals(len(rows), k, **options)
    if progress is not None:
        progress(len(rows), len(rows))
    return GenerationResult("idk", table, len(rows), elapsed_s=time.perf_counter() - start)
