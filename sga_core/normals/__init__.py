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
from typing import Any

from sga_core.normals.result import GenerationResult, Progress

__all__ = [
    "BACKENDS",
    "BACKEND_DESCRIPTIONS",
    "GenerationResult",
    "Progress",
    "generate_normals",
]

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
