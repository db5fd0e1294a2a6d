"""The result type shared by every metric, and small helpers for cleaning inputs."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class MetricResult:
    """One metric: an aggregate ``value`` and the ``per_sample`` values it was built from.

    When the metric cannot be computed, ``value`` is None and ``reason`` says why (for example
    ``"no retain-reference truth ratios"``). Per-sample entries may be None for rows that could
    not be scored (for example a row without perturbed answers); aggregates skip them.
    """

    name: str
    value: float | None
    per_sample: list = field(default_factory=list)
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.value is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def missing(name: str, reason: str, per_sample: list | None = None) -> MetricResult:
    """A result that could not be computed."""
    return MetricResult(name, None, list(per_sample or []), reason)


def is_number(x: Any) -> bool:
    """A real, non-NaN number (inf allowed); bools are not numbers here."""
    if x is None or isinstance(x, bool):
        return False
    try:
        return not math.isnan(float(x))
    except (TypeError, ValueError):
        return False


def values_of(x: MetricResult | Iterable | None) -> list | None:
    """The per-sample list of a :class:`MetricResult`, or the sequence itself as a list."""
    if x is None:
        return None
    if isinstance(x, MetricResult):
        return list(x.per_sample)
    return list(x)


def scalar_of(x: MetricResult | float | None) -> float | None:
    """The aggregate of a :class:`MetricResult`, or the number itself (None if not a number)."""
    if isinstance(x, MetricResult):
        x = x.value
    return float(x) if is_number(x) else None


def numbers(xs: Iterable) -> list[float]:
    """The entries of ``xs`` that are numbers, as floats (None and NaN dropped)."""
    return [float(x) for x in xs if is_number(x)]


def mean_or_none(xs: Iterable) -> float | None:
    vals = numbers(xs)
    return sum(vals) / len(vals) if vals else None


def safe_exp(x: float) -> float:
    """``exp(x)`` that gives ``inf`` instead of raising on overflow."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf
