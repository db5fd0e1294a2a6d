"""Loading and validating datasets and normal-answer tables (SPEC 3).

Formats: ``.json`` (a JSON array, an object wrapping one list of records, or JSON Lines as
TOFU ships it), ``.jsonl``, ``.csv`` and ``.parquet``. Every problem raises :class:`DataError`
naming the file, the row and the field; a file either loads completely or not at all.

Row numbers count data records the way a person does: the first array element, the first
JSONL line, the first CSV row under the header or the first parquet row is row 1 (for JSONL
the row is the physical line number).

No torch, streamlit or pandas at import time; pyarrow is imported only for parquet files.
"""

from __future__ import annotations

import ast
import csv
import functools
import io
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sga_core.fileio import atomic_write_jsonl

SUPPORTED_EXTENSIONS = (".json", ".jsonl", ".csv", ".parquet")
DATASET_KINDS = ("qa", "text")

PathLike = str | os.PathLike


# --------------------------------------------------------------------------------------
# Errors


class DataError(ValueError):
    """A problem in a data file, located by file (base name), row (1-based) and field."""

    def __init__(
        self,
        reason: str,
        file: str | None = None,
        row: int | None = None,
        field: str | None = None,
    ) -> None:
        self.reason = reason
        self.file = file
        self.row = row
        self.field = field
        super().__init__(self._message())

    def _message(self) -> str:
        parts = []
        if self.file is not None:
            parts.append(self.file)
        if self.row is not None:
            parts.append(f"row {self.row}")
        if self.field is not None:
            parts.append(f"field '{self.field}'")
        return f"{', '.join(parts)}: {self.reason}" if parts else self.reason

    def __str__(self) -> str:
        return self._message()

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.file, self.row, self.field))

    def with_file(self, file: str | None) -> DataError:
        """A copy of this error naming ``file`` (kept if already set)."""
        return DataError(self.reason, self.file or file, self.row, self.field)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "row": self.row,
            "field": self.field,
            "reason": self.reason,
            "message": str(self),
        }


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


# --------------------------------------------------------------------------------------
# Reading records


@dataclass
class _Raw:
    """Records read from one file, with the human row number of each record."""

    file: str
    records: list[dict[str, Any]]
    rows: list[int]


def load_records(path: PathLike) -> list[dict[str, Any]]:
    """Read a .json / .jsonl / .csv / .parquet file into a list of dicts (not validated)."""
    return _read(path).records


def _read(path: PathLike, allow_empty: bool = False) -> _Raw:
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
        if ext == ".parquet":
            raw = _read_parquet(p, name)
        else:
            try:
                text = p.read_bytes().decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise DataError(f"not UTF-8 text (byte {exc.start})", name) from None
            if not text.strip():
                if allow_empty:
                    return _Raw(name, [], [])
                raise DataError("file is empty", name)
            if ext == ".csv":
                raw = _read_csv(text, name)
            elif ext == ".jsonl":
                raw = _read_jsonl_or_array(text, name)
            else:
                raw = _read_json(text, name)
    except OSError as exc:
        raise DataError(f"cannot read file: {exc.strerror or exc}", name) from None
    if not raw.records and not allow_empty:
        raise DataError("file holds no records", name)
    return raw


def _check_objects(items: Sequence[Any], rows: Sequence[int], name: str) -> _Raw:
    for item, row in zip(items, rows):
        if not isinstance(item, dict):
            raise DataError(f"expected an object (record), got {_type_name(item)}", name, row)
    return _Raw(name, list(items), list(rows))


def _json_error(exc: json.JSONDecodeError, name: str) -> DataError:
    return DataError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", name)


def _read_jsonl(text: str, name: str) -> _Raw:
    items: list[Any] = []
    rows: list[int] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(
                f"invalid JSON on line {lineno} (column {exc.colno}): {exc.msg}", name, lineno
            ) from None
        rows.append(lineno)
    return _check_objects(items, rows, name)


def _read_jsonl_or_array(text: str, name: str) -> _Raw:
    """A .jsonl file; a whole JSON array in it is accepted too."""
    if text.lstrip().startswith("["):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            pass
        else:
            return _from_document(doc, name)
    return _read_jsonl(text, name)


def _read_json(text: str, name: str) -> _Raw:
    """A .json file: one JSON document, or JSON Lines (TOFU's .json files are JSONL)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        first = text.lstrip().splitlines()[0]
        try:
            json.loads(first)
        except json.JSONDecodeError:
            raise _json_error(exc, name) from None
        return _read_jsonl(text, name)
    return _from_document(doc, name)


def _is_record_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def _from_document(doc: Any, name: str) -> _Raw:
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
        return _Raw(name, [doc], [1])  # a single record (a one-line JSON Lines file)
    raise DataError(f"expected a JSON array of objects, got {_type_name(doc)}", name)


def _read_csv(text: str, name: str) -> _Raw:
    """CSV with a header row; every cell stays a string and an empty cell is missing."""
    old_limit = csv.field_size_limit()
    csv.field_size_limit(2**31 - 1)
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        try:
            header = next(reader, None)
            if header is None or not any(h.strip() for h in header):
                raise DataError("the CSV header row is empty", name)
            columns = [h.strip() for h in header]
            seen: set[str] = set()
            for col in columns:
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
                rec = {col: c for col, c in zip(columns, cells) if col and c != ""}
                records.append(rec)
                rows.append(row)
        except csv.Error as exc:
            raise DataError(f"invalid CSV: {exc}", name, reader.line_num or None) from None
    finally:
        csv.field_size_limit(old_limit)
    return _Raw(name, records, rows)


def _read_parquet(path: Path, name: str) -> _Raw:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError("reading .parquet files needs the 'pyarrow' package", name) from None
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise DataError(f"not a readable parquet file ({exc})", name) from None
    records = [
        {k: v for k, v in rec.items() if v is not None and not k.startswith("__index_level_")}
        for rec in table.to_pylist()
    ]
    return _Raw(name, records, list(range(1, len(records) + 1)))


# --------------------------------------------------------------------------------------
# Validation


def _required_str(rec: dict[str, Any], key: str, file: str | None, row: int | None) -> str:
    value = rec.get(key)
    if value is None:
        raise DataError("missing required field", file, row, key)
    if not isinstance(value, str):
        raise DataError(f"expected a string, got {_type_name(value)}", file, row, key)
    if not value.strip():
        raise DataError("empty string", file, row, key)
    return value


def _optional_str(out: dict[str, Any], key: str, file: str | None, row: int | None) -> None:
    """Check an optional string field in place; null or empty means absent."""
    if key not in out:
        return
    value = out[key]
    if value is None or (isinstance(value, str) and not value.strip()):
        del out[key]
    elif not isinstance(value, str):
        raise DataError(f"expected a string, got {_type_name(value)}", file, row, key)


def _parse_list_string(text: str, file: str | None, row: int | None, key: str) -> Any:
    """A list written into one cell: JSON ('["a","b"]') or Python repr ("['a', 'b']")."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise DataError("looks like a list but is not valid JSON", file, row, key) from None


def _str_list(value: Any, file: str | None, row: int | None, key: str) -> list[str]:
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("[") and s.endswith("]"):
            value = _parse_list_string(s, file, row, key)
        else:
            return [value]
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise DataError(f"expected a list of strings, got {_type_name(value)}", file, row, key)
    for i, item in enumerate(value, start=1):
        if not isinstance(item, str):
            raise DataError(f"item {i} should be a string, got {_type_name(item)}", file, row, key)
        if not item.strip():
            raise DataError(f"item {i} is an empty string", file, row, key)
    return value


def _validate_qa(rec: dict[str, Any], file: str | None, row: int | None) -> dict[str, Any]:
    out = dict(rec)
    _required_str(out, "question", file, row)
    _required_str(out, "answer", file, row)
    _optional_str(out, "paraphrased_answer", file, row)
    _optional_str(out, "paraphrased_question", file, row)
    if out.get("perturbed_answer") is None:
        out.pop("perturbed_answer", None)
    else:
        items = _str_list(out["perturbed_answer"], file, row, "perturbed_answer")
        if items:
            out["perturbed_answer"] = items
        else:
            del out["perturbed_answer"]
    return out


def _validate_text(rec: dict[str, Any], file: str | None, row: int | None) -> dict[str, Any]:
    out = dict(rec)
    cont_key = "continuation" if out.get("continuation") is not None else "gt"
    if out.get(cont_key) is not None:
        # a missing prompt (an empty CSV cell) is an empty prompt
        prompt = out.setdefault("prompt", "")
        if prompt is None:
            prompt = out["prompt"] = ""
        if not isinstance(prompt, str):
            raise DataError(f"expected a string, got {_type_name(prompt)}", file, row, "prompt")
        out["continuation"] = _required_str(out, cont_key, file, row)
    elif out.get("text") is not None:
        out["prompt"] = ""
        out["continuation"] = _required_str(out, "text", file, row)
    elif out.get("prompt") is not None:
        raise DataError("missing required field (or 'gt')", file, row, "continuation")
    else:
        raise DataError("missing required field (or 'prompt' + 'continuation')", file, row, "text")
    return out


def load_qa(path: PathLike) -> list[dict[str, Any]]:
    """Load and validate QA rows (``question``, ``answer`` + optional TOFU fields)."""
    raw = _read(path)
    return [_validate_qa(rec, raw.file, row) for rec, row in zip(raw.records, raw.rows)]


def load_text(path: PathLike) -> list[dict[str, Any]]:
    """Load text rows; each gets ``prompt`` ("" for plain text) and ``continuation``."""
    raw = _read(path)
    return [_validate_text(rec, raw.file, row) for rec, row in zip(raw.records, raw.rows)]


# --------------------------------------------------------------------------------------
# Datasets


@dataclass
class Dataset:
    """Validated rows of one data file."""

    kind: str
    rows: list[dict[str, Any]]
    path: str

    def __len__(self) -> int:
        return len(self.rows)


def detect_kind(records: Sequence[dict[str, Any]], file: str | None = None) -> str:
    """``"qa"`` or ``"text"``, judged from the fields of the first record."""
    if not records:
        raise DataError("no records", file)
    first = records[0]
    if not isinstance(first, dict):
        raise DataError(f"expected an object (record), got {_type_name(first)}", file, 1)
    if "question" in first and "answer" in first:
        return "qa"
    if "text" in first or ("prompt" in first and ("continuation" in first or "gt" in first)):
        return "text"
    if "question" in first:
        missing = "'answer'"
    elif "answer" in first:
        missing = "'question'"
    elif "prompt" in first:
        missing = "'continuation' (or 'gt')"
    else:
        missing = "'question' + 'answer' (QA) or 'text' / 'prompt' + 'continuation' (text)"
    have = ", ".join(map(repr, first)) or "none"
    raise DataError(f"cannot tell the data kind: missing {missing}; fields: {have}", file, 1)


def load_dataset(path: PathLike, kind: str = "auto") -> Dataset:
    """Load a QA or text dataset; ``kind`` is ``"auto"``, ``"qa"`` or ``"text"``."""
    if kind not in ("auto", *DATASET_KINDS):
        raise ValueError(f"kind must be 'auto', 'qa' or 'text', not {kind!r}")
    raw = _read(path)
    if kind == "auto":
        kind = detect_kind(raw.records, raw.file)
    check = _validate_qa if kind == "qa" else _validate_text
    rows = [check(rec, raw.file, row) for rec, row in zip(raw.records, raw.rows)]
    return Dataset(kind=kind, rows=rows, path=str(path))


def rows_hash(rows: Sequence[dict[str, Any]]) -> str:
    """A content hash of validated rows (independent of the file format they came in): two
    runs compare only when they trained on the same forget rows."""
    import hashlib

    blob = json.dumps(list(rows), sort_keys=True, ensure_ascii=False)
    return hashlib.sha1(blob.encode("utf-8")).hexdigest()


def file_rows_hash(path: PathLike, kind: str = "auto") -> str | None:
    """:func:`rows_hash` of a data file's validated rows (None when it does not load),
    computed once per file version (path, size and modification time)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _file_rows_hash(str(path), st.st_size, st.st_mtime_ns, kind)


@functools.lru_cache(maxsize=512)
def _file_rows_hash(path: str, size: int, mtime_ns: int, kind: str) -> str | None:
    try:
        return rows_hash(load_dataset(path, kind=kind).rows)
    except (DataError, OSError):
        return None


def write_dataset(path: PathLike, rows: Iterable[dict[str, Any]]) -> Path:
    """Write rows atomically as JSON Lines (e.g. a data snapshot in a run folder)."""
    return atomic_write_jsonl(path, list(rows))
