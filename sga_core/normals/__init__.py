"""Generating normal answers (docs/spec.md#33-normal-answers). Each backend returns a NormalTable
with K-1 answers per forget row and its provenance.

One entry point serves the command line and the browser::

    result = generate_normals("retrieval", forget_rows, "qa", 4, retain_rows=retain_rows)
    result.table.save("normals.jsonl")

Backends: one module per backend in this folder, each registering itself (its name, a
``param()`` settings dataclass, a ``generate`` function; :mod:`sga_core.normals.registry`).
Heavy libraries are imported only when one is used. Shipped:

- ``retrieval``: answers of the most similar retain rows (sentence embeddings, the paper's
  TOFU recipe), "I don't know" templates where no neighbour is similar enough;
- ``openai``: a chat model behind an OpenAI-compatible API (the paper used GPT-4o-mini) with a
  prompt template from ``assets/prompts``;
- ``local``: the same templates answered by a local instruct model (offline);
- ``idk``: K-1 "I don't know" refusals per row.
"""

from __future__ import annotations

from typing import Any

from sga_core.normals.registry import (
    REGISTRY,
    Backend,
    backend_names,
    backends,
    get_backend,
    register_backend,
)
from sga_core.normals.result import GenerationResult, Progress

__all__ = [
    "BACKENDS",
    "Backend",
    "GenerationResult",
    "Progress",
    "backend_names",
    "backends",
    "generate_normals",
    "get_backend",
    "register_backend",
]

backends()  # discover the backend modules of this folder
#: the registered backends' names (a live view of the registry)
BACKENDS = REGISTRY.keys()




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
    kind is used when ``kind`` is None); ``k`` is K. ``options`` are the backend's settings
    (the fields of its ``Config``) and runtime options (see its ``generate``), all backends
    accepting ``progress=callable(done, total)``. Unknown options raise ``ValueError``.
    """
    entry = get_backend(backend)
    allowed = entry.options()
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"backend {backend!r} has no option {unknown[0]!r} (its options: "
                         f"{', '.join(sorted(allowed))})")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"K must be an integer >= 1, got {k!r}")
    rows, kind = _rows_and_kind(forget_rows, kind)
    options = {key: value for key, value in options.items() if value is not None}
    if entry.needs_retain and "retain_rows" not in options:
        raise ValueError(f"the {backend} backend needs retain_rows (the retain set)")
    return entry.generate(rows, kind, k, **options)
