"""Text every layer writes: counts in words ("1 run", "2 runs", never "1 runs") and names
from files made safe to print (no terminal escapes, no bidi overrides)."""

from __future__ import annotations


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``n`` and ``noun``, the noun in the plural unless n is exactly 1 (``many``: an
    irregular plural, else noun + "s")."""
    return f"{n} {noun if n == 1 else (many or noun + 's')}"


def printable(name: str) -> str:
    """``name`` with every character that is not printable (controls such as ESC, bidi
    overrides such as U+202E, line breaks) written as an escape (``\\x1b``, ``\\u202e``), so a
    field name from a file can neither colour a terminal nor reorder the text around it."""
    if name.isprintable():
        return name
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in name)
