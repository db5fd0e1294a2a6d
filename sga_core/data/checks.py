"""Checks every loader applies to what it parsed, before anything else uses it: JSON that
Python's parser cannot take (nesting beyond its recursion limit, integers of more than 4300
digits), duplicate keys, and the bounds of :mod:`sga_core.data.limits` on every value of a
record (nesting depth, string size, text that is not valid Unicode)."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import Any

from sga_core.data.errors import DataError, short
from sga_core.data.limits import MAX_DEPTH, MAX_STRING_CHARS
from sga_core.text import printable

_SURROGATE = re.compile("[\ud800-\udfff]")
# characters no field name may hold: C0 and C1 controls (ESC starts terminal escapes), the
# bidi embeddings, overrides, isolates and marks (U+202E shows 'exe.txt' as 'txt.exe'), and
# line or paragraph separators
_BAD_NAME_CHAR = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                            "\u202a-\u202e\u2066-\u2069]")


def check_field_name(name: str, file: str | None, row: int | None = None,
                     field: str | None = None) -> None:
    """A field name (a column, a JSON key, a mapping's source) without control or
    bidi-override characters; the error names the field escaped (:func:`printable`)."""
    bad = _BAD_NAME_CHAR.search(name)
    if bad:
        ch = bad.group()
        what = unicodedata.name(ch, "a control character")
        raise DataError(f"the field name '{printable(name)}' holds U+{ord(ch):04X} ({what}) "
                        f"at character {bad.start() + 1}: control and bidi characters are not "
                        "allowed in field names (they hide or reorder text); rename the field",
                        file, row, name if field is None else field)


class _RepeatedKeys(dict):
    """A JSON object that repeated a key (the last value is kept until the check reports it)."""

    repeated: str = ""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    marked = _RepeatedKeys(obj)
    marked.repeated = next(k for k, _ in pairs if k in seen or seen.add(k))
    return marked


def _no_number(name: str) -> None:
    """NaN and Infinity (Python's JSON extensions) read as null: missing, as in parquet."""
    return None


def _finite(text: str) -> float | None:
    value = float(text)  # 1e999 is inf: read as null too, so a written file reloads the same
    return value if math.isfinite(value) else None


def parse_json(text: str, file: str | None, row: int | None = None) -> Any:
    """``json.loads`` whose every failure is a :class:`DataError`; a repeated key is marked
    for :func:`check_record` (which knows the row) instead of silently dropping a value, and
    NaN, Infinity and numbers too large for a float read as null."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_number,
                          parse_float=_finite)
    except json.JSONDecodeError as exc:
        at = (f"on line {row} (column {exc.colno})" if row is not None
              else f"at line {exc.lineno}, column {exc.colno}")
        raise DataError(f"invalid JSON {at}: {exc.msg}", file, row) from None
    except RecursionError:
        raise DataError(f"JSON nested too deeply (at most {MAX_DEPTH} levels are allowed)",
                        file, row) from None
    except ValueError as exc:  # Python refuses integers of more than 4300 digits
        reason = ("a number has more than 4300 digits" if "digits" in str(exc)
                  else f"invalid JSON: {exc}")
        raise DataError(reason, file, row) from None


def check_text(value: str, file: str | None, row: int | None, field: str | None,
               bounded: bool = True) -> None:
    """A string a file set: at most MAX_STRING_CHARS characters, no NUL character (an
    escaped ``"\\u0000"``, refused like a raw NUL byte in the file), and valid Unicode (a
    lone surrogate, from an escaped ``"\\ud800"``, can be neither tokenized nor shown)."""
    if bounded and len(value) > MAX_STRING_CHARS:
        hint = (" (a whole book or corpus in one string: split it into rows, or import a "
                "MUSE folder with Import a benchmark / `python -m sga_core import "
                "muse-books`, which cuts long texts into token chunks)") if file else ""
        raise DataError(f"a string of {len(value):,} characters; at most "
                        f"{MAX_STRING_CHARS:,} are allowed{hint}", file, row, field)
    if "\x00" in value:  # an escaped \u0000 in JSON: refused like a raw NUL in the file
        raise DataError(f"holds a NUL character (character {value.index(chr(0)) + 1} of "
                        "this string, written \\u0000 in JSON): text cannot hold one; "
                        "remove it", file, row, field)
    bad = _SURROGATE.search(value)
    if bad:
        raise DataError(f"holds a lone surrogate (U+{ord(bad.group()):04X}, written "
                        f"\\u{ord(bad.group()):04x} in JSON) at character {bad.start() + 1}: "
                        "not valid Unicode text", file, row, field)


def check_record(rec: dict[str, Any], file: str | None, row: int | None,
                 bounded: bool = True) -> None:
    """Every value of a record within the limits (iteratively: no recursion to exhaust);
    ``bounded`` False: strings of any length (a benchmark's raw text, cut into chunks
    before the limits apply, :mod:`sga_core.data.long_text`)."""
    stack: list[tuple[Any, int, str | None]] = [(rec, 1, None)]
    while stack:
        value, depth, field = stack.pop()
        if isinstance(value, str):
            check_text(value, file, row, field, bounded)
        elif isinstance(value, (dict, list, tuple)):
            if depth > MAX_DEPTH:
                raise DataError(f"nested more than {MAX_DEPTH} levels deep", file, row, field)
            if isinstance(value, _RepeatedKeys):
                key = value.repeated
                raise DataError(f"the key {short(key)} appears twice in one object",
                                file, row, field or key)
            if isinstance(value, dict):
                for key, item in value.items():
                    name = field if field is not None else key
                    check_text(key, file, row, name)
                    check_field_name(key, file, row, name)
                    stack.append((item, depth + 1, name))
            else:
                stack.extend((item, depth + 1, field) for item in value)
