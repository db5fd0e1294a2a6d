"""Warnings about a project's rows that load fine but would mislead a run or its scores
(the hard checks, which refuse a file, are in :mod:`sga_core.data.checks`):

- a forget row that is also a retain row: training pushes the same answer down and up;
- forget rows repeated: a repeated row is unlearned as often as it repeats;
- a VerbMem set (a text project's forget rows, or its ``forget_eval`` set) whose plain
  ``text`` rows are too short to split into a prompt and a continuation: VerbMem scores
  them 0 with no other sign of why.

Each warning names the rows (1-based, as the Data page and the files count them).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

_CONTENT = {"qa": ("question", "answer"), "text": ("text", "prompt", "continuation")}
_SHOWN = 5


def _same_text(value: Any) -> str:
    """``value`` as a reader sees it: one composed form (NFC: 'e' + a combining accent is
    'é'), invisible format characters (zero-width space, soft hyphen, bidi marks) dropped,
    runs of white space as one space."""
    text = unicodedata.normalize("NFC", str(value or ""))
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(text.split())


def _key(row: Mapping[str, Any], kind: str) -> tuple:
    return tuple(_same_text(row.get(f)) for f in _CONTENT.get(kind, ()))


def _rows(numbers: Sequence[int]) -> str:
    shown = ", ".join(map(str, numbers[:_SHOWN]))
    return shown + (f" and {len(numbers) - _SHOWN} more" if len(numbers) > _SHOWN else "")


def duplicate_forget_rows(forget: Sequence[Mapping], kind: str) -> str | None:
    first: dict[tuple, int] = {}
    repeats: list[tuple[int, int]] = []
    for i, row in enumerate(forget, start=1):
        key = _key(row, kind)
        if key in first:
            repeats.append((i, first[key]))
        else:
            first[key] = i
    if not repeats:
        return None
    pairs = ", ".join(f"{i} (= row {j})" for i, j in repeats[:_SHOWN])
    more = f" and {len(repeats) - _SHOWN} more" if len(repeats) > _SHOWN else ""
    return (f"{len(repeats)} forget row(s) repeat an earlier one: row {pairs}{more}; a "
            "repeated row is unlearned as many times as it appears")


def forget_rows_in_retain(forget: Sequence[Mapping], retain: Sequence[Mapping],
                          kind: str) -> str | None:
    retain_at: dict[tuple, int] = {}
    for i, row in enumerate(retain, start=1):
        retain_at.setdefault(_key(row, kind), i)
    both = [(i, retain_at[k]) for i, row in enumerate(forget, start=1)
            if (k := _key(row, kind)) in retain_at]
    if not both:
        return None
    pairs = ", ".join(f"{i} (= retain row {j})" for i, j in both[:_SHOWN])
    more = f" and {len(both) - _SHOWN} more" if len(both) > _SHOWN else ""
    return (f"{len(both)} forget row(s) are identical to retain rows: forget row {pairs}"
            f"{more}; training unlearns them on the forget side and keeps them on the retain "
            "side at once")


def text_only_verbmem(rows: Sequence[Mapping], name: str) -> str | None:
    """VerbMem scores a continuation against a row's true continuation: a plain text row is
    split after its first 15 words (in the middle when shorter), so a one-word text (or a
    row whose continuation is empty) leaves nothing to compare and scores 0."""
    empty = [i for i, r in enumerate(rows, start=1)
             if not str(r.get("continuation") or r.get("gt") or "").strip()
             and (str(r.get("prompt") or "").strip()
                  or len(str(r.get("text") or "").split()) < 2)]
    if not empty:
        return None
    every = " (every row)" if len(empty) == len(rows) else ""
    return (f"VerbMem set '{name}': row {_rows(empty)}{every} leaves no continuation to "
            "compare with (plain text rows are split after their first 15 words, or in the "
            "middle when shorter; a one-word text has no second half), so VerbMem scores "
            "those rows 0; give longer texts, or prompt and continuation fields")


def row_warnings(kind: str, forget: Sequence[Mapping], retain: Sequence[Mapping] = (),
                 sets: Mapping[str, Sequence[Mapping]] | None = None) -> list[str]:
    """Every warning about a project's rows, in words (empty: nothing to say)."""
    sets = sets or {}
    out = [duplicate_forget_rows(forget, kind), forget_rows_in_retain(forget, retain, kind)]
    if kind == "text":
        name = "forget_eval" if sets.get("forget_eval") else "forget"
        out.append(text_only_verbmem(sets.get("forget_eval") or forget, name))
    return [w for w in out if w]
