"""Long texts cut the way MUSE trains on them: a benchmark's raw text (a whole book in
``raw/forget.txt``, a 1.4-million-character string in ``raw/retain2.json``) is not a row.
MUSE tokenizes each raw text and trains on fixed-length chunks of its tokens (muse_bench
``baselines/dataset.py``, ``max_len`` 2048); a text is cut here into consecutive chunks of at
most ``chunk_tokens`` tokens of the tokenizer the project's models use, each chunk one text
row ``{"text": ...}``. The chunks are slices of the original text, cut between words (at
most 64 tokens short of a full chunk; a token boundary where no word starts that near) and
trimmed of whitespace at the cuts, so VerbMem's passages are still found in them verbatim.

The per-string limit (:data:`~sga_core.data.limits.MAX_STRING_CHARS`) applies to the chunks,
what is kept, not to the raw text (the file-size limit still applies to the file). A text
short enough to be one chunk is kept as it is, and no tokenizer is loaded when every text is
(a UTF-8 byte is at least one token's worth: a text of at most ``chunk_tokens`` bytes is
never cut). Needs ``transformers``: runs in the import's own process, never in the UI's
(docs/decisions/007-ui-never-loads-a-model.md)."""

from __future__ import annotations

import os
from typing import Any

from sga_core.data.errors import DataError

CHUNK_TOKENS = 2048  # MUSE's max_len (and the MUSE protocol's max_length)
TEXT = "text"
WORD_BACKOFF = 64  # tokens a cut may move back to fall between two words


def _word_start(text: str, at: int) -> bool:
    """Whether character ``at`` begins a word or the space before one."""
    return 0 < at < len(text) and (text[at].isspace() or text[at - 1].isspace())


def read_long_records(path: str | os.PathLike, name: str | None = None) -> list[dict[str, Any]]:
    """The records of a raw text file with no limit on one string's length: a ``.txt`` file
    is one text (the whole file, as MUSE reads it), a JSON list of strings one text each."""
    from sga_core.data.formats import read_raw

    try:
        return read_raw(path, whole_txt=True, bounded=False).records
    except DataError as exc:
        raise DataError(exc.reason, name or exc.file, exc.row, exc.field) from None


def needs_cutting(records: list[dict[str, Any]], chunk_tokens: int) -> bool:
    """Whether any record's text may be longer than one chunk."""
    return any(isinstance(r.get(TEXT), str) and len(r[TEXT].encode("utf-8")) > chunk_tokens
               for r in records)


def chunk_text(text: str, tok, chunk_tokens: int) -> list[str]:
    """``text`` in consecutive slices of at most ``chunk_tokens`` of ``tok``'s tokens (a
    fast tokenizer's offsets; else whole words, :func:`sga_core.data.book.segments`)."""
    if chunk_tokens < 1:
        raise DataError(f"chunk tokens: a chunk must be at least 1 token, got {chunk_tokens}")
    if not text.strip():
        return []
    if getattr(tok, "is_fast", False):
        offsets = tok(text, add_special_tokens=False,
                      return_offsets_mapping=True)["offset_mapping"]
        if len(offsets) <= chunk_tokens:
            return [text.strip()]
        cuts, start = [0], 0
        while start + chunk_tokens < len(offsets):
            end = start + chunk_tokens
            # cut between words where one begins in the last tokens (a word split between
            # two chunks matches neither), else at the token boundary
            j = next((j for j in range(end, max(start + 1, end - WORD_BACKOFF), -1)
                      if _word_start(text, offsets[j][0])), end)
            cuts.append(offsets[j][0])
            start = j
        bounds = list(zip(cuts, cuts[1:] + [len(text)]))
        return [c for a, b in bounds if (c := text[a:b].strip())]
    from sga_core.data.book import segments

    return [" ".join(seg) for seg in segments(text, tok, chunk_tokens)]


def chunk_records(records: list[dict[str, Any]], tok, chunk_tokens: int
                  ) -> tuple[list[dict[str, Any]], int, int]:
    """Each record whose ``text`` is longer than a chunk as one record per chunk (its other
    fields copied); returns the records, how many texts were cut and the longest text's
    length in characters."""
    out: list[dict[str, Any]] = []
    cut = longest = 0
    for rec in records:
        text = rec.get(TEXT)
        if not isinstance(text, str) or len(text.encode("utf-8")) <= chunk_tokens:
            out.append(rec)
            continue
        longest = max(longest, len(text))
        pieces = chunk_text(text, tok, chunk_tokens)
        cut += len(pieces) > 1
        out += [{**rec, TEXT: piece} for piece in pieces]
    return out, cut, longest
