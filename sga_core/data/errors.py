"""The one error a data file can cause: :class:`DataError`, naming the file (base name only,
never a server-side folder), the row and the field."""

from __future__ import annotations

import reprlib
from typing import Any

from sga_core.text import printable

_SHOWN = 80  # characters of a field name or value quoted in a message
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 3, 6, 6, 4
_REPR.maxstring, _REPR.maxlong, _REPR.maxother = _SHOWN, 40, _SHOWN


def short(value: Any) -> str:
    """A bounded ``repr`` of a value from a file (a huge string, list or number, or deep
    nesting, costs no more than a short one), for messages quoting it."""
    try:
        text = _REPR.repr(value)
    except ValueError:  # an int too long to print (more than 4300 digits)
        text = f"<{type(value).__name__} too long to show>"
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


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
        if self.file is not None:  # a file's name is the sender's choice (an upload's)
            parts.append(printable(self.file))
        if self.row is not None:
            parts.append(f"row {self.row}")
        if self.field is not None:
            name = printable(self.field)
            name = name if len(name) <= _SHOWN else name[:_SHOWN - 3] + "..."
            parts.append(f"field '{name}'")
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


def type_name(value: Any) -> str:
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
