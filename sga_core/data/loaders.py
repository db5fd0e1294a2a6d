"""Loading and validating QA and text datasets (docs/spec.md#3-data-shapes).

Formats: ``.json``, ``.jsonl``, ``.csv`` and ``.parquet`` (read by :mod:`.formats`). Every
problem raises :class:`DataError` naming the file, the row and the field, and nothing but a
:class:`DataError` leaves a loader; a file either loads completely or not at all.

Row numbers count data records the way a person does: the first array element, the first
JSONL line, the first CSV row under the header or the first parquet row is row 1 (for JSONL
the row is the physical line number).

No torch, streamlit or pandas at import time; pyarrow is imported only for parquet files.
"""

from __future__ import annotations

import ast
import functools
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sga_core.data.checks import check_text, parse_json
from sga_core.data.errors import DataError
from sga_core.data.errors import type_name as _type_name
from sga_core.data.formats import SUPPORTED_EXTENSIONS, PathLike, read_raw
from sga_core.data.mapping import apply_map, translate
from sga_core.fileio import atomic_write_jsonl

__all__ = ["DATASET_KINDS", "SUPPORTED_EXTENSIONS", "DataError", "Dataset", "PathLike",
           "detect_kind", "file_rows_hash", "load_dataset", "load_qa", "load_records",
           "load_text", "rows_hash", "write_dataset"]

DATASET_KINDS = ("qa", "text", "mc")  # mc: multiple-choice rows (evaluation sets only)


def load_records(path: PathLike) -> list[dict[str, Any]]:
    """Read a .json / .jsonl / .csv / .parquet file into a list of dicts (not validated)."""
    return read_raw(path).records


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
        return parse_json(text, file, row)
    except DataError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise DataError("looks like a list but is not valid JSON", file, row, key) from None


def _str_list(value: Any, file: str | None, row: int | None, key: str) -> list[str]:
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return []  # an empty cell: no items
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
        check_text(item, file, row, key)
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


def _validate_mc(rec: dict[str, Any], file: str | None, row: int | None) -> dict[str, Any]:
    """A multiple-choice row as ``cais/wmdp`` and ``cais/mmlu`` publish them: ``question``,
    ``choices`` (2 to 26 strings) and ``answer``, the index of the right choice (an integer,
    or its digits in a CSV cell)."""
    out = dict(rec)
    _required_str(out, "question", file, row)
    if out.get("choices") is None:
        raise DataError("missing required field", file, row, "choices")
    choices = _str_list(out["choices"], file, row, "choices")
    if not 2 <= len(choices) <= 26:
        raise DataError(f"expected 2 to 26 choices, got {len(choices)}", file, row, "choices")
    answer = out.get("answer")
    if isinstance(answer, str) and answer.strip().isdigit():
        answer = int(answer.strip())
    if isinstance(answer, float) and answer.is_integer():
        answer = int(answer)
    if answer is None:
        raise DataError("missing required field", file, row, "answer")
    if isinstance(answer, bool) or not isinstance(answer, int):
        raise DataError(f"expected the index of the right choice (an integer), got "
                        f"{_type_name(answer)}", file, row, "answer")
    if not 0 <= answer < len(choices):
        raise DataError(f"the index {answer} is not one of the {len(choices)} choices "
                        f"(0 to {len(choices) - 1})", file, row, "answer")
    _optional_str(out, "subject", file, row)
    return out | {"choices": choices, "answer": answer}


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
    raw = read_raw(path)
    return [_validate_qa(rec, raw.file, row) for rec, row in zip(raw.records, raw.rows)]


def load_text(path: PathLike) -> list[dict[str, Any]]:
    """Load text rows; each gets ``prompt`` ("" for plain text) and ``continuation``."""
    raw = read_raw(path)
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


def detect_kind(records: Sequence[dict[str, Any]], file: str | None = None,
                mapping: dict[str, str] | None = None) -> str:
    """``"qa"`` or ``"text"``, judged from the fields of the first record. Where it cannot
    be told, the DataError names the fields as the file has them (``mapping``: a field read
    under another name is said as "'query' (read as 'question')")."""
    if not records:
        raise DataError("no records", file)
    first = records[0]
    if not isinstance(first, dict):
        raise DataError(f"expected an object (record), got {_type_name(first)}", file, 1)
    if "question" in first and "choices" in first:
        return "mc"
    if "question" in first and "answer" in first:
        return "qa"
    if "text" in first or ("prompt" in first and ("continuation" in first or "gt" in first)):
        return "text"
    if "question" in first:
        why, fix = "a QA row needs an 'answer' besides its 'question'", "answer"
    elif "answer" in first:
        why, fix = "a QA row needs a 'question' besides its 'answer'", "question"
    elif "prompt" in first:
        why, fix = ("cannot tell the data kind: a text row needs a 'continuation' (or 'gt') "
                    "after its 'prompt', a QA row 'question' + 'answer'"), "question"
    else:
        why, fix = ("cannot tell the data kind: a QA row needs 'question' + 'answer', a text "
                    "row 'text' (or 'prompt' + 'continuation')"), "question"
    back = {t: s for s, t in (mapping or {}).items()}
    have = ", ".join(f"'{back[k]}' (read as '{k}')" if k in back else repr(k)
                     for k in first) or "none"
    raise DataError(f"{why}; the file's fields: {have} (map the field that holds it: the "
                    f"Data page's field mapping, or --map FIELD={fix} on the command line)",
                    file, 1)


def load_dataset(path: PathLike, kind: str = "auto",
                 field_map: dict[str, str] | None = None) -> Dataset:
    """Load a QA, text or multiple-choice dataset; ``kind`` is ``"auto"``, ``"qa"``,
    ``"text"`` or ``"mc"``.
    ``field_map`` renames the file's fields first (``{"prompt": "question"}``,
    :mod:`sga_core.data.mapping`); errors then name the file's own field."""
    if kind not in ("auto", *DATASET_KINDS):
        raise ValueError(f"kind must be 'auto', 'qa', 'text' or 'mc', not {kind!r}")
    raw = read_raw(path)
    try:
        records = apply_map(raw.records, field_map, raw.file, raw.rows)
        if kind == "auto":
            kind = detect_kind(records, raw.file, field_map)
        check = {"qa": _validate_qa, "mc": _validate_mc}.get(kind, _validate_text)
        rows = [check(rec, raw.file, row) for rec, row in zip(records, raw.rows)]
    except DataError as exc:
        raise translate(exc.with_file(raw.file), field_map) from None
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
