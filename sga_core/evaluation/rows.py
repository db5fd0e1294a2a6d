"""The rows an evaluation scores: each set loaded from a file or given as a list, the
rows of a benchmark's own evaluation sets in place of the training rows (the set roles,
:data:`sga_core.protocols.SET_ROLES`), and an evenly spaced subset of every set
(``eval.max_rows``) with each row's own index kept."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sga_core.evaluation.common import EvalError, is_qa_rows, retain_subset
from sga_core.protocols import ICL_SUFFIX, SET_ROLES


@dataclass
class EvalRows:
    """The rows of one evaluation, their files (None for rows given as a list), the indices
    a subset kept (set name -> indices) and how many rows each subset set had."""

    kind: str
    forget: list[dict]
    retain: list[dict]
    sets: dict[str, list[dict]]
    forget_path: str | None = None
    retain_path: str | None = None
    set_paths: dict[str, str | None] = field(default_factory=dict)
    row_ids: dict[str, list[int]] = field(default_factory=dict)
    rows_of: dict[str, int] = field(default_factory=dict)


def load_rows(src, kind: str = "auto") -> tuple[list[dict], str | None, str]:
    """Rows from a file path or a list; returns (rows, path or None, kind)."""
    from sga_core.data import load_dataset

    if src is None:
        return [], None, kind
    if isinstance(src, (str, os.PathLike)):
        ds = load_dataset(src, kind=kind)
        return ds.rows, str(src), ds.kind
    rows = list(src)
    if kind == "auto":
        kind = "qa" if is_qa_rows(rows) else "text"
    return rows, None, kind


def eval_rows(forget, retain=None, sets: Mapping[str, Any] | None = None, task: str = "auto",
              max_rows: int = 0) -> EvalRows:
    """The rows :func:`~sga_core.evaluation.run.evaluate_model` scores: ``forget`` /
    ``retain`` / each of ``sets`` a data file or a list of rows, ``task`` 'qa', 'text' or
    'auto' (from the forget data); an EvalError when there are no forget rows or the task is
    neither. The sets ``forget_eval`` and ``retain_eval`` replace the forget / retain rows;
    ``max_rows``: at most this many rows of every set (0 = all)."""
    forget_rows, forget_path, kind = load_rows(forget, task)
    if not forget_rows:
        raise EvalError("no forget rows to evaluate")
    if kind not in ("qa", "text"):
        raise EvalError(f"task must be 'qa' or 'text', got {kind!r}")
    retain_rows, retain_path, _ = load_rows(retain, kind)
    set_rows: dict[str, list[dict]] = {}
    set_paths: dict[str, str | None] = {}
    for name, src in (sets or {}).items():
        set_rows[name], set_paths[name], _ = load_rows(src, "auto")
    # a benchmark's own evaluation rows replace the training rows: TOFU's retain_perturbed
    # (retain_eval), MUSE's verbmem forget passages (forget_eval)
    # (the roles that replace rows: sga_core.protocols.SET_ROLES)
    for name, role in SET_ROLES.items():
        if role.replaces == "forget" and set_rows.get(name):
            forget_rows = set_rows.pop(name)
        elif role.replaces == "retain" and set_rows.get(name):
            retain_rows = set_rows.pop(name)
    row_ids, rows_of = {}, {}
    if max_rows:  # a subset of every set, the same for the reference (its key: the rows)
        forget_rows, row_ids["forget"], rows_of["forget"] = subset(forget_rows, max_rows)
        retain_rows, row_ids["retain"], rows_of["retain"] = subset(retain_rows or [],
                                                                   max_rows)
        for name in list(set_rows):
            if not name.endswith(ICL_SUFFIX):
                set_rows[name], row_ids[name], rows_of[name] = subset(set_rows[name],
                                                                      max_rows)
        rows_of = {n: total for n, total in rows_of.items()
                   if total > len(row_ids[n])}
    return EvalRows(kind, forget_rows, retain_rows, set_rows, forget_path, retain_path,
                    set_paths, row_ids, rows_of)


def subset(rows: list[dict], max_rows: int) -> tuple[list[dict], list[int], int]:
    """At most ``max_rows`` of ``rows``, evenly spaced (as the retain subset): ``(rows
    kept, their indices, how many there were)``."""
    keep = retain_subset(len(rows), max_rows)
    return [rows[i] for i in keep], keep, len(rows)


def own_index(tokens: list[dict], row_ids: dict[str, list[int]]) -> list[dict]:
    """Token records of the forget rows with each row's own index (``eval.max_rows``)."""
    ids = row_ids.get("forget")
    return [{**t, "index": ids[t["index"]]} for t in tokens] if ids else tokens
