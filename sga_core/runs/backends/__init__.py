"""The backends jobs run on, found by discovery: one module of this package each, with a
``BACKEND`` (:class:`~sga_core.runs.backends.base.Backend`). ``local`` (this machine's
queue) is the default: a job whose status no other backend owns is local.

The modules are found on first use, whatever was imported before (never at import time:
:mod:`sga_core.runs.folder` asks this registry how a job is shown, and the backends build
on the run folder)."""

from __future__ import annotations

import importlib
import pkgutil

from sga_core.runs.backends.base import Backend

DEFAULT = "local"


def _discover() -> dict[str, Backend]:
    found: dict[str, Backend] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name == "base":
            continue
        b = getattr(importlib.import_module(f"{__name__}.{info.name}"), "BACKEND", None)
        if isinstance(b, Backend):
            found[b.name] = b
    return found


_FOUND: dict[str, Backend] = {}


def backends() -> dict[str, Backend]:
    """name -> backend (discovered once, on first use)."""
    if not _FOUND:
        _FOUND.update(_discover())
    return _FOUND


def backend(name: str | None = None) -> Backend:
    """The backend called ``name`` (None: the default); ValueError naming the choices."""
    try:
        return backends()[name or DEFAULT]
    except KeyError:
        raise ValueError(f"no backend {name!r}; there are: {', '.join(backends())}") from None


def backend_of(status: dict) -> Backend:
    """The backend a job was sent to, from its status (the default when no other owns it)."""
    found = backends()
    for b in found.values():
        if b.name != DEFAULT and b.owns(status):
            return b
    return found[DEFAULT]


def job_where(status: dict) -> str | None:
    """Where a job runs, as its backend says it (None: nothing to say, as for a job of this
    machine's queue)."""
    return backend_of(status).describe(status)


def sent_to(status: dict) -> str:
    """Where a job was sent, as a message says it ("SLURM as job 12", "this machine's
    queue")."""
    b = backend_of(status)
    job = b.job_name(status)
    return f"{b.label} as {job}" if job else b.label


def names() -> list[str]:
    """The backends' names, the default first (the ``--backend`` choices)."""
    return [DEFAULT] + sorted(n for n in backends() if n != DEFAULT)


__all__ = ["DEFAULT", "Backend", "backend", "backend_of", "backends", "job_where", "names",
           "sent_to"]
