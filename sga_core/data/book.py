"""The copyright task's data from your own text files (nothing copyrighted ships): a "book"
split into segments of at most N tokens (the paper: 400 segments of at most 512 tokens of a
Harry Potter book, after FLAT), each segment's first P tokens the prompt a model completes
(FLAT's ``hp_*_qa_200.jsonl``: 200-token prompts), and a retain corpus split the same way.

Segments end at whitespace, so a prompt and its continuation are whole words; a segment's
length is checked with the model's own tokenizer.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sga_core.data.errors import DataError
from sga_core.data.limits import MAX_FILE_BYTES

WORD = re.compile(r"\S+")


def read_text_file(path: str | os.PathLike) -> str:
    """A text file decoded like the data loaders' files (UTF-8, or UTF-16/32 with a BOM);
    a NUL character or any other undecodable content is a DataError naming the file."""
    from sga_core.data.formats import _decode

    p = Path(path)
    try:
        if p.stat().st_size > MAX_FILE_BYTES:
            raise DataError(f"larger than {MAX_FILE_BYTES // 2**20} MiB", p.name)
        text = _decode(p.read_bytes(), p.name)
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", p.name) from None
    if not text.strip():
        raise DataError("the file holds no text", p.name)
    return text


def _count(tok, words: list[str]) -> int:
    return len(tok(" ".join(words), add_special_tokens=False)["input_ids"])


def _fit(tok, words: list[str], start: int, limit: int) -> int:
    """The largest ``end`` (at least ``start + 1``) with ``words[start:end]`` at most
    ``limit`` tokens: a bisection (the count grows with the words), since every word is at
    least one token there are at most ``limit`` of them."""
    lo, hi = start + 1, min(len(words), start + limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _count(tok, words[start:mid]) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def segments(text: str, tok, max_tokens: int) -> list[list[str]]:
    """The text's words in consecutive segments of at most ``max_tokens`` tokens each (a
    single word longer than that is a segment of its own)."""
    words = WORD.findall(text)
    out: list[list[str]] = []
    i = 0
    while i < len(words):
        j = _fit(tok, words, i, max_tokens)
        out.append(words[i:j])
        i = j
    return out


def check_token_counts(max_tokens: int, prompt_tokens: int) -> None:
    """A segment of at least 2 tokens whose prompt is at least 1 token and shorter than it
    (a DataError naming which count is wrong)."""
    if max_tokens < 2:
        raise DataError(f"segment tokens: a segment must be at least 2 tokens (a prompt and "
                        f"its continuation), got {max_tokens}")
    if prompt_tokens < 1:
        raise DataError(f"prompt tokens: the prompt must be at least 1 token, got "
                        f"{prompt_tokens}")
    if prompt_tokens >= max_tokens:
        raise DataError(f"prompt tokens: the prompt ({prompt_tokens} tokens) must be shorter "
                        f"than a segment ({max_tokens} tokens)")


def book_rows(text: str, tok, max_tokens: int = 512, prompt_tokens: int = 200) -> list[dict]:
    """Text rows ``{"prompt", "continuation"}`` of a book: each segment's first words up to
    ``prompt_tokens`` tokens are the prompt, the rest the continuation (segments too short to
    have both are left out)."""
    check_token_counts(max_tokens, prompt_tokens)
    rows = []
    for seg in segments(text, tok, max_tokens):
        cut = _fit(tok, seg, 0, prompt_tokens)
        if cut < len(seg):
            rows.append({"prompt": " ".join(seg[:cut]), "continuation": " ".join(seg[cut:])})
    if not rows:
        raise DataError(f"the book gives no segment longer than its {prompt_tokens}-token "
                        "prompt")
    return rows


def corpus_rows(text: str, tok, max_tokens: int = 512) -> list[dict]:
    """Text rows ``{"text"}`` of a retain corpus: its segments of at most ``max_tokens``."""
    return [{"text": " ".join(seg)} for seg in segments(text, tok, max_tokens)]
