"""Reading the records of a data file: .json (a JSON array, an object wrapping one list of
records, or JSON Lines as TOFU ships it), .jsonl, .csv, .parquet (:mod:`.parquet`) and .txt.

Text passages come in two plain shapes besides records: a JSON array of strings (MUSE's own
``raw`` and ``privleak`` files) and a ``.txt`` file of passages separated by blank lines;
each string or block becomes the record ``{"text": ...}`` (docs/spec.md#3-data-shapes).

Every problem is a :class:`DataError` naming the file's base name, and the row where one
applies; every record is checked against :mod:`sga_core.data.limits` before it is returned.
Text files are UTF-8 (a byte-order mark is skipped; UTF-16 and UTF-32 with a byte-order mark
are read too). JSON Lines are split at line ends only ("\\n", "\\r\\n", "\\r"): a raw U+2028,
U+2029 or U+0085 inside a string is text, as JSON says (``str.splitlines`` would break the
line there).
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sga_core.data.checks import check_field_name, check_record, parse_json
from sga_core.data.errors import DataError, type_name
from sga_core.data.limits import MAX_FILE_BYTES, MAX_ROWS, MAX_STRING_CHARS

SUPPORTED_EXTENSIONS = (".json", ".jsonl", ".csv", ".parquet", ".txt")
TEXT_FIELD = "text"  # the field a plain string (a list item, a .txt block) becomes
# a .txt file's passages are separated by one or more blank lines (spaces allowed on them)
_BLANK_LINES = re.compile(r"(?:\r\n|\r|\n)[ \t]*(?:\r\n|\r|\n)\s*")

PathLike = str | os.PathLike

# a JSON Lines line ends at \n, \r\n or \r: none of them can stand raw inside a JSON string,
# unlike U+2028, U+2029 and U+0085 (which str.splitlines() would also split at)
_LINE_END = re.compile(r"\r\n|\r|\n")
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))


@dataclass
class Raw:
    """Records read from one file, with the human row number of each record."""

    file: str
    records: list[dict[str, Any]]
    rows: list[int]


def read_raw(path: PathLike, allow_empty: bool = False, *, whole_txt: bool = False,
             bounded: bool = True) -> Raw:
    """The records of a data file, not yet validated as QA, text or normal answers.
    ``whole_txt``: a .txt file is one text (a book, as MUSE reads its raw files), not
    passages; ``bounded`` False: strings of any length (text cut into chunks before the
    limits apply, :mod:`sga_core.data.long_text`)."""
    p = Path(path)
    name = p.name
    ext = p.suffix.lower()
    if ext not in SUPPORTED_EXTENSIONS:
        shown = ext or "(none)"
        raise DataError(
            f"unsupported file type {shown}; use one of {', '.join(SUPPORTED_EXTENSIONS)}",
            name,
        )
    if not p.is_file():
        raise DataError("file not found" if not p.exists() else "not a file", name)
    try:
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise DataError(f"the file is {size / 2**20:,.0f} MiB; at most "
                            f"{MAX_FILE_BYTES // 2**20} MiB can be read", name)
        if ext == ".parquet":
            from sga_core.data.parquet import read_parquet

            records = read_parquet(p, name)
            raw = Raw(name, records, list(range(1, len(records) + 1)))
        else:
            text = _decode(p.read_bytes(), name)
            if not text.strip():
                if allow_empty:
                    return Raw(name, [], [])
                raise DataError("file is empty", name)
            if ext == ".csv":
                raw = _read_csv(text, name)
            elif ext == ".txt" and whole_txt:
                raw = Raw(name, [{TEXT_FIELD: text.strip()}], [1])
            elif ext == ".txt":
                raw = _read_txt(text, name)
            elif ext == ".jsonl":
                raw = _read_jsonl_or_array(text, name)
            else:
                raw = _read_json(text, name)
    except OSError as exc:
        raise DataError(f"cannot read file: {exc.strerror or type(exc).__name__}", name) from None
    if not raw.records and not allow_empty:
        raise DataError("file holds no records", name)
    if len(raw.records) > MAX_ROWS:
        raise DataError(f"{len(raw.records):,} rows; at most {MAX_ROWS:,} are allowed", name)
    for rec, row in zip(raw.records, raw.rows):
        check_record(rec, name, row, bounded)
    return raw


def _decode(data: bytes, name: str) -> str:
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), "utf-8")
    shown = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8"}.get(encoding, encoding.upper())
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise DataError(f"not {shown} text (byte {exc.start}); save the file as UTF-8",
                        name) from None
    if "\x00" in text:
        raise DataError(f"holds a NUL character (character {text.index(chr(0)) + 1}): a "
                        "binary file, or UTF-16 text without a byte-order mark; save it as "
                        "UTF-8 text", name)
    return text


def _check_objects(items: Sequence[Any], rows: Sequence[int], name: str) -> Raw:
    """Records as they are; a list whose every item is a string is a list of text passages
    (``{"text": s}`` each); a mix of the two names the first item of the other shape."""
    if items and all(isinstance(item, str) for item in items):
        return Raw(name, [{TEXT_FIELD: item} for item in items], list(rows))
    strings = bool(items) and isinstance(items[0], str)
    for item, row in zip(items, rows):
        if strings and not isinstance(item, str):
            raise DataError(f"expected a string (the rows before are text passages), got "
                            f"{type_name(item)}", name, row)
        if not strings and not isinstance(item, dict):
            raise DataError(f"expected an object (record), got {type_name(item)}", name, row)
    return Raw(name, list(items), list(rows))


def _read_txt(text: str, name: str) -> Raw:
    """A plain text file: one passage per block of lines, blocks separated by blank lines
    (a passage's own line breaks are kept); row N is the N-th passage."""
    blocks = [b.strip() for b in _BLANK_LINES.split(text.strip())]
    blocks = [b for b in blocks if b]
    if len(blocks) > MAX_ROWS:
        raise DataError(f"{len(blocks):,} passages; at most {MAX_ROWS:,} are allowed", name)
    return Raw(name, [{TEXT_FIELD: b} for b in blocks], list(range(1, len(blocks) + 1)))


def _read_jsonl(text: str, name: str) -> Raw:
    lines = _LINE_END.split(text)
    if len(lines) > MAX_ROWS + 1 and sum(1 for ln in lines if ln.strip()) > MAX_ROWS:
        raise DataError(f"more than {MAX_ROWS:,} rows; at most {MAX_ROWS:,} are allowed", name)
    items: list[Any] = []
    rows: list[int] = []
    for lineno, line in enumerate(lines, start=1):
        if line.strip():
            items.append(parse_json(line, name, lineno))
            rows.append(lineno)
    return _check_objects(items, rows, name)


def _read_jsonl_or_array(text: str, name: str) -> Raw:
    """A .jsonl file; a whole JSON array in it is accepted too."""
    if text.lstrip().startswith("["):
        try:
            doc = parse_json(text, name)
        except DataError:
            pass
        else:
            return _from_document(doc, name)
    return _read_jsonl(text, name)


def _read_json(text: str, name: str) -> Raw:
    """A .json file: one JSON document, or JSON Lines (TOFU's .json files are JSONL)."""
    try:
        doc = parse_json(text, name)
    except DataError as whole:
        first = text.lstrip().split("\n", 1)[0]
        try:
            parse_json(first, name)
        except DataError:
            raise whole from None
        return _read_jsonl(text, name)
    return _from_document(doc, name)


def _is_record_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def _from_document(doc: Any, name: str) -> Raw:
    if isinstance(doc, list):
        return _check_objects(doc, range(1, len(doc) + 1), name)
    if isinstance(doc, dict):
        lists = [k for k, v in doc.items() if _is_record_list(v) and (v or len(doc) == 1)]
        if len(lists) == 1:
            items = doc[lists[0]]
            return _check_objects(items, range(1, len(items) + 1), name)
        if len(lists) > 1:
            raise DataError(
                "the JSON object holds several lists of records "
                f"({', '.join(map(repr, lists))}); expected one",
                name,
            )
        return Raw(name, [doc], [1])  # a single record (a one-line JSON Lines file)
    raise DataError(f"expected a JSON array of objects, got {type_name(doc)}", name)


def _read_csv(text: str, name: str) -> Raw:
    """CSV with a header row; every cell stays a string and an empty cell is missing.

    Read strictly first, which is how a quote that never closes is found (a lenient reader
    would swallow the rest of the file into one cell); a file that only a lenient reader
    takes (a character after a closing quote) is read leniently, as before."""
    old_limit = csv.field_size_limit()
    csv.field_size_limit(MAX_STRING_CHARS)
    try:
        try:
            return _csv_records(text, name, strict=True)
        except _Lenient:
            return _csv_records(text, name, strict=False)
    finally:
        csv.field_size_limit(old_limit)


class _Lenient(Exception):
    """A strict CSV reader failed where a lenient one may succeed."""


def _csv_records(text: str, name: str, strict: bool) -> Raw:
    reader = csv.reader(io.StringIO(text, newline=""), strict=strict)
    row = -1  # the header
    try:
        header = next(reader, None)
        row = 0
        if header is None or not any(h.strip() for h in header):
            raise DataError("the CSV header row is empty", name)
        columns = [h.strip() for h in header]
        seen: set[str] = set()
        for col in columns:
            check_field_name(col, name)
            if col and col in seen:
                raise DataError("duplicate column in the CSV header", name, None, col)
            seen.add(col)
        records: list[dict[str, Any]] = []
        rows: list[int] = []
        for row, cells in enumerate(reader, start=1):
            if not any(c.strip() for c in cells):
                continue  # blank line or a row of empty cells
            if len(cells) > len(columns):
                raise DataError(
                    f"{len(cells)} cells but the header has {len(columns)} columns",
                    name,
                    row,
                )
            if len(records) >= MAX_ROWS:
                raise DataError(f"more than {MAX_ROWS:,} rows; at most {MAX_ROWS:,} are "
                                "allowed", name)
            records.append({col: c for col, c in zip(columns, cells) if col and c != ""})
            rows.append(row)
    except csv.Error as exc:
        message = str(exc)
        at = row + 1 or None  # the record being read (None: the header)
        if "field larger than field limit" in message:
            raise DataError(f"a cell holds more than {MAX_STRING_CHARS:,} characters; at most "
                            f"{MAX_STRING_CHARS:,} are allowed", name, at) from None
        if strict and "unexpected end of data" in message:
            raise DataError('unterminated quote: a quoted cell (starting with ") never ends; '
                            "the rest of the file would be one cell", name, at) from None
        if strict:
            raise _Lenient from None
        raise DataError(f"invalid CSV: {exc}", name, reader.line_num or None) from None
    return Raw(name, records, rows)
