"""Counts in words: "1 run", "2 runs" (never "1 runs")."""

from __future__ import annotations


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``n`` and ``noun``, the noun in the plural unless n is exactly 1 (``many``: an
    irregular plural, else noun + "s")."""
    return f"{n} {noun if n == 1 else (many or noun + 's')}"
