"""Every kind of background job, found by discovery: one module of this package each, with
a ``KIND`` (:class:`~sga_core.runs.jobs.base.JobKind`). This is the one place that says
which kinds exist: a run folder's (training, evaluation, stress test; prepare is two
trainings and their evaluations) and a project's (normal answers, r*, probe, import). The
lifecycle they share is :mod:`sga_core.runs.jobs.base`."""

from __future__ import annotations

import importlib
import pkgutil

from sga_core.runs.jobs.base import JobKind


def _discover() -> dict[str, JobKind]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        kind = getattr(importlib.import_module(f"{__name__}.{info.name}"), "KIND", None)
        if isinstance(kind, JobKind):
            found.append(kind)
    found.sort(key=lambda k: (k.priority, k.key))
    return {k.key: k for k in found}


#: key ("run", "eval", "stress", ...) -> its kind, in the order the runner starts them
KINDS: dict[str, JobKind] = _discover()


def run_kinds() -> list[JobKind]:
    """The kinds of job a run folder has (training, evaluation, stress test), in the order
    the runner starts them; the others are a project's (normals, r*, probe, import)."""
    return [k for k in KINDS.values() if k.where == "run"]


def kind(key: str) -> JobKind:
    """The job kind named ``key`` (KeyError naming the kinds there are)."""
    try:
        return KINDS[key]
    except KeyError:
        raise KeyError(f"no job kind {key!r}; there are: {', '.join(KINDS)}") from None


__all__ = ["KINDS", "JobKind", "kind", "run_kinds"]
