"""Names and small helpers shared by the evaluation modules: the files of an ``eval/`` folder,
the error type, progress reports, the retain subset, strict-JSON numbers."""

from __future__ import annotations

import gc
import math
from collections.abc import Callable
from typing import Any

# the files of an evaluation's folder (the names are RunFolder's)
from sga_core.runs.folder import EVAL_DIR, EVAL_LOG  # noqa: F401
from sga_core.runs.folder import LAYERS as LAYERS_FILE  # noqa: F401
from sga_core.runs.folder import PER_SAMPLE as PER_SAMPLE_FILE  # noqa: F401
from sga_core.runs.folder import REFERENCE_CACHE as REFERENCE_CACHE_FILE  # noqa: F401
from sga_core.runs.folder import SUMMARY as SUMMARY_FILE  # noqa: F401
from sga_core.runs.folder import TOKENS as TOKENS_FILE  # noqa: F401

SUMMARY_VERSION = 1

# progress(stage, done, total), or None
Progress = Callable[[str, int, int], None] | None


class EvalError(ValueError):
    """An evaluation that cannot start (no model, no data); the message says what is missing."""


class EvalCancelled(Exception):
    """An evaluation stopped on request (a CANCEL file, SIGTERM): recorded as cancelled,
    not failed."""


def report(progress: Progress, stage: str, done: int, total: int) -> None:
    if progress is not None:
        progress(stage, done, total)


def retain_subset(n_rows: int, max_rows: int) -> list[int]:
    """Indices of an evenly spaced, deterministic subset of ``max_rows`` of ``n_rows`` rows
    (all rows when ``max_rows`` is 0 or not smaller)."""
    if not max_rows or max_rows >= n_rows:
        return list(range(n_rows))
    return [i * n_rows // max_rows for i in range(max_rows)]


def own_indices(row_ids, name: str, n_rows: int) -> list[int]:
    """The rows' own indices of the set ``name`` of which ``n_rows`` rows are given:
    ``row_ids[name]`` where a subset was taken (``eval.max_rows``), else 0 .. n_rows-1."""
    given = (row_ids or {}).get(name)
    return list(given) if given is not None and len(given) == n_rows else list(range(n_rows))


def is_qa_rows(rows) -> bool:
    return bool(rows) and all(isinstance(r, dict) and "question" in r and "answer" in r
                              for r in rows)


def finite(x: Any) -> Any:
    """Non-finite floats -> None, recursively (summary files are strict JSON)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def free_memory() -> None:
    """Give memory back after a model was dropped (the caller deletes its references)."""
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # pragma: no cover - cleanup only
        pass
