"""Whether evaluation passages come from the training text: a passage *occurs* in a corpus
when it is found there verbatim, or (the looser check) when a long stretch of it is (at least
:data:`LONG_MATCH` characters in a row). Whitespace is compared loosely (any run of spaces
and line breaks is one space), so re-wrapped lines still match.

MUSE derived its VerbMem and PrivLeak forget passages from the forget articles: a subset of
the articles keeps the passages found verbatim in it (:func:`found_verbatim`), and a set
that replaces the forget rows is checked against the trained forget set (:func:`not_found`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

WINDOW = 64  # characters of each probe
STEP = 16  # probes start every STEP characters: any common stretch of WINDOW + STEP - 1 is seen
LONG_MATCH = WINDOW + STEP  # what "a long stretch" is, as the messages say it
_SPACE = re.compile(r"\s+")
_SEP = "\x00"  # between documents: no passage spans two of them


def squeeze(text: str) -> str:
    return _SPACE.sub(" ", text or "").strip()


def passage(row: dict | str) -> list[str]:
    """The forms a row's passage may take in its source: ``text``, or prompt + gt
    (continuation) joined as they are and with a space (MUSE's prompts end mid-sentence)."""
    if isinstance(row, str):
        return [squeeze(row)]
    if isinstance(row.get("text"), str) and row["text"].strip():
        return [squeeze(row["text"])]
    prompt = row.get("prompt") or ""
    cont = row.get("continuation") or row.get("gt") or ""
    return list(dict.fromkeys(squeeze(p) for p in (prompt + cont, prompt + " " + cont)))


def corpus(texts: Iterable[dict | str]) -> str:
    """The documents as one searchable string (whitespace squeezed)."""
    return _SEP.join(p for t in texts for p in passage(t)[:1])


def found_verbatim(row: dict | str, haystack: str) -> bool:
    return any(p and p in haystack for p in passage(row))


def found_long(row: dict | str, haystack: str) -> bool:
    """Verbatim, or a stretch of at least :data:`LONG_MATCH` characters of it."""
    if found_verbatim(row, haystack):
        return True
    for p in passage(row):
        if len(p) < LONG_MATCH:
            continue
        if any(p[i:i + WINDOW] in haystack for i in range(0, len(p) - WINDOW + 1, STEP)):
            return True
    return False


def not_found(rows: Sequence[dict], texts: Iterable[dict | str]) -> list[int]:
    """0-based indices of the rows that do not occur in ``texts`` (:func:`found_long`).
    Consecutive texts are also searched joined: a long text imported as consecutive chunks
    (:func:`sga_core.data.long_text.chunk_records`) may cut a passage in two, and the
    passage was trained on all the same."""
    docs = [p for t in texts for p in passage(t)[:1]]
    haystack = _SEP.join(docs) + _SEP + " ".join(docs)
    return [i for i, r in enumerate(rows) if not found_long(r, haystack)]
