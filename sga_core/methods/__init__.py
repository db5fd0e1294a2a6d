"""Unlearning methods: one file per method in this folder, found by discovery. A module here
that defines a :class:`Method` subclass with a ``name`` is all it takes for the CLI, the Train
page and the trainer to offer it (README: "Add a method")."""

from __future__ import annotations

import importlib
import pkgutil

from sga_core.methods.base import (
    REGISTRY,
    Method,
    MethodData,
    SeqStats,
    StopTraining,
    Unit,
    flatten,
)


def _discover() -> None:
    for info in pkgutil.iter_modules(__path__):
        if info.name != "base" and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_discover()


def get_method(name: str) -> type[Method]:
    if name not in REGISTRY:
        raise KeyError(f"unknown method {name!r}; known: {method_names()}")
    return REGISTRY[name]


def method_names(unlearning_only: bool = False) -> list[str]:
    """Registered method names in display order (rank, then name)."""
    classes = sorted(REGISTRY.values(), key=lambda c: (c.rank, c.name))
    return [c.name for c in classes if c.unlearning or not unlearning_only]


def explain_method(name: str, args: dict) -> str | None:
    """A method's settings in words (SGA: its coefficients), None when it has none or the
    settings are not valid yet."""
    from sga_core.params import ConfigError, from_dict

    cls = get_method(name)
    try:
        return cls(from_dict(cls.Config, args)).explain()
    except (ConfigError, ValueError):
        return None


__all__ = ["REGISTRY", "Method", "MethodData", "SeqStats", "StopTraining", "Unit", "flatten",
           "explain_method", "get_method", "method_names"]
