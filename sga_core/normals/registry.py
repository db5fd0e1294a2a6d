"""The normals backends' registry: one module per backend in this folder, found by discovery.

A backend module defines a ``param()`` dataclass of its settings (its ``Config``) and a
``generate(forget_rows, kind, k, **options)`` function decorated with
:func:`register_backend`; that is all it takes for :func:`sga_core.normals.generate_normals`,
the ``normals`` command (``--backend`` choices, one flag per setting) and the Normal answers
page (the backend choice, the settings form) to offer it, and for a normal answer to name it as
its source. A backend module outside this folder registers the same way once imported.

Options a backend takes that are not settings (``progress``, the retain rows, an API client)
are its ``runtime_options``; an API key is never a setting: a backend that needs one names the
environment variable it is read from (``api_key_env``), and the key never reaches a file.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: modules of this folder that are not backends (the machinery around them)
_NOT_BACKENDS = frozenset({"job", "registry", "result", "templates"})


@dataclass(frozen=True)
class Backend:
    """One registered backend."""

    name: str
    description: str  # one line: the page's choice and the CLI's help say it
    config: type  # its settings: a dataclass of param() fields
    generate: Callable[..., Any]  # generate(forget_rows, kind, k, **options) -> GenerationResult
    runtime_options: frozenset[str]  # keyword options beyond the settings
    rank: int = 100  # the order the page and the CLI offer backends in
    needs_retain: bool = False  # it reads the retain set (the ``retain_rows`` option)
    loads_model: bool = False  # its job says "loading the model" first
    api_key_env: str | None = None  # the environment variable its API key comes from

    def settings(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self.config)]

    def options(self) -> frozenset[str]:
        """Every keyword option ``generate`` accepts (beyond rows, kind and K)."""
        return frozenset(self.settings()) | self.runtime_options


REGISTRY: dict[str, Backend] = {}


def register_backend(name: str, config: type, *, description: str,
                     runtime_options: tuple[str, ...] = ("seed", "progress"), rank: int = 100,
                     needs_retain: bool = False, loads_model: bool = False,
                     api_key_env: str | None = None):
    """Decorate a backend's ``generate`` function: register it under ``name`` with its
    settings dataclass ``config``. A second backend of the same name is refused."""
    if not dataclasses.is_dataclass(config):
        raise TypeError(f"normals backend {name!r}: config must be a dataclass")

    def decorate(generate: Callable[..., Any]) -> Callable[..., Any]:
        if name in REGISTRY and REGISTRY[name].generate is not generate:
            raise ValueError(f"normals backend {name!r} is registered twice")
        REGISTRY[name] = Backend(name, description, config, generate,
                                 frozenset(runtime_options), rank, needs_retain, loads_model,
                                 api_key_env)
        return generate

    return decorate


def unregister_backend(name: str) -> None:
    """Remove a backend (a test's own, once it is done)."""
    REGISTRY.pop(name, None)


_discovered = False


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name not in _NOT_BACKENDS and not info.name.startswith("_"):
            importlib.import_module(f"sga_core.normals.{info.name}")


def backends() -> list[Backend]:
    """Every registered backend, in the order they are offered (rank, then name)."""
    _discover()
    return sorted(REGISTRY.values(), key=lambda b: (b.rank, b.name))


def backend_names() -> list[str]:
    return [b.name for b in backends()]


def get_backend(name: str) -> Backend:
    """The backend called ``name``; an unknown name raises ValueError listing the known."""
    _discover()
    if name not in REGISTRY:
        raise ValueError(f"unknown normals backend {name!r}; choose one of "
                         f"{', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]
