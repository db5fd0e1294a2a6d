"""Registry of unlearning methods: one file per method, looked up by name."""

from __future__ import annotations

from sga_core.methods.base import Method, MethodData, SeqStats, Unit

_REGISTRY: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    if not cls.name or cls.name in _REGISTRY:
        raise ValueError(f"method name {cls.name!r} is empty or already registered")
    _REGISTRY[cls.name] = cls
    return cls


def get_method(name: str) -> type[Method]:
    if name not in _REGISTRY:
        raise KeyError(f"unknown method {name!r}; known: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def method_names(unlearning_only: bool = False) -> list[str]:
    return [n for n, c in _REGISTRY.items() if c.unlearning or not unlearning_only]


# import for registration side effects (order = display order)
from sga_core.methods import finetune, ga, graddiff, idk, kl, npo, sga  # noqa: E402,F401

__all__ = ["Method", "MethodData", "SeqStats", "Unit", "get_method", "method_names", "register"]
