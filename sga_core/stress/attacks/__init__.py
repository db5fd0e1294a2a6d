"""The stress attacks: one file per attack in this folder, found by discovery (as the
methods are). A module here that defines an :class:`~sga_core.stress.base.Attack` subclass
with a ``name`` is all it takes for the ``stress`` command, the pages' stress forms, the
result checks, the "Does it hold?" table and the reference docs to offer it
(docs/stress-tests.md#add-an-attack). Everything else reads the attacks from here.
"""

from __future__ import annotations

import importlib
import pkgutil

from sga_core.stress.base import REGISTRY, Attack, FormChoice


def _discover() -> None:
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_discover()


def attacks() -> list[type[Attack]]:
    """The registered attacks in display order (rank, then name)."""
    return sorted(REGISTRY.values(), key=lambda c: (c.rank, c.name))


def attack_names() -> list[str]:
    """Registered attack names in display order."""
    return [c.name for c in attacks()]


def default_attacks(kind: str | None = None) -> list[str]:
    """The attacks a stress test runs when none are named (``stress`` without --attacks,
    the pages' preselection): those that declare ``default`` (``kind``: and that attack that
    data kind, so a text run is not offered the QA-only ones)."""
    return [c.name for c in attacks() if c.default and (kind is None or kind in c.kinds)]


def get_attack(name: str) -> type[Attack]:
    if name not in REGISTRY:
        raise KeyError(f"unknown attack {name!r}; known: {attack_names()}")
    return REGISTRY[name]


def attack_of(key: str, family: str | None = None) -> type[Attack] | None:
    """The attack that wrote result ``key`` (a result's ``family`` when it names one, else
    the attack that owns the key); None for a key no registered attack writes."""
    if family in REGISTRY:
        return REGISTRY[family]
    return next((c for c in attacks() if c.owns(key)), None)


def form_choices() -> list[FormChoice]:
    """The settings the pages' stress forms offer, every attack's, in display order."""
    return [fc for c in attacks() for fc in c.form]


def info_fields() -> dict[str, object]:
    """What a case's ``info`` may hold: every attack's ``info_fields`` (name -> type)."""
    return {k: t for c in attacks() for k, t in c.info_fields.items()}


__all__ = ["attack_names", "attack_of", "attacks", "default_attacks", "form_choices",
           "get_attack", "info_fields"]
