"""Reading .parquet data files (pyarrow, imported only here and only when one is read).

Columns of any common type load; values JSON cannot hold are converted, so a dataset written
back as JSON Lines (a project's forget.jsonl) reloads identically:

- timestamp, date and time: ISO-8601 text (``2024-05-01T12:00:00+00:00``, ``2024-05-01``);
- duration: seconds, as a number;
- decimal: its exact decimal text (``"12.50"``); numeric fields (``k``, ``score``) read it;
- binary: the text it holds when it is UTF-8, else its base64 text;
- NaN and infinite floats: missing (like a null);
- anything else pyarrow returns (intervals, extension types): lists, objects or text.

Rows are decoded in small batches and the whole is bounded by ``MAX_DECODED_BYTES``: a small
compressed file cannot expand into more memory than that.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import math
import re
from pathlib import Path
from typing import Any

from sga_core.data.errors import DataError
from sga_core.data.limits import MAX_DECODED_BYTES, MAX_ROWS

_BATCH_ROWS = 256


def plain(value: Any) -> Any:
    """A pyarrow value as a JSON value (the rules in the module docstring)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value) if value.is_finite() else None
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(data).decode("ascii")
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item"):  # a numpy scalar (float16)
        return plain(value.item())
    return str(value)


def _without_paths(message: str, name: str) -> str:
    """pyarrow's message with every file path in it cut to its base name (a path shown to the
    user would reveal where the server keeps uploads)."""
    return re.sub(r"(?<![\w.])(?:[A-Za-z]:)?[/\\][^\s'\"]+",
                  lambda m: Path(m.group()).name or name, message).strip()


def read_parquet(path: Path, name: str) -> list[dict[str, Any]]:
    """The file's rows as records (null values and pandas index columns left out)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError("reading .parquet files needs the 'pyarrow' package", name) from None
    try:
        pf = pq.ParquetFile(path)
        rows = pf.metadata.num_rows
        names = pf.schema_arrow.names
    except Exception as exc:  # pyarrow raises several kinds for a file that is not parquet
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"not a readable parquet file ({_without_paths(first, name)})",
                        name) from None
    if rows > MAX_ROWS:
        raise DataError(f"{rows:,} rows; at most {MAX_ROWS:,} are allowed", name)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DataError("duplicate column in the parquet file", name, None, repeated[0])
    records: list[dict[str, Any]] = []
    decoded = 0
    try:
        for batch in pf.iter_batches(batch_size=_BATCH_ROWS):
            decoded += batch.nbytes
            if decoded > MAX_DECODED_BYTES:
                raise DataError(f"the rows decode to more than {MAX_DECODED_BYTES // 2**20} "
                                "MiB; that is the most a file may hold", name)
            for rec in batch.to_pylist():
                out = {}
                for key, value in rec.items():
                    value = plain(value)
                    if value is not None and not key.startswith("__index_level_"):
                        out[key] = value
                records.append(out)
    except (pa.ArrowException, OSError, ValueError, TypeError, OverflowError) as exc:
        if isinstance(exc, DataError):
            raise
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"cannot read the rows ({_without_paths(first, name)})", name,
                        len(records) + 1) from None
    return records
