"""The stress test's settings, one typed dataclass: the settings every attack shares
(:class:`~sga_core.stress.base.CommonSettings`) and each registered attack's own (its
``Settings``), joined by :func:`settings_class`. So an attack's settings are declared in its
own file, and the ``stress`` command's flags, a queued request, the checks before any model
loads and a result's ``settings`` all follow from them. ``sga_core.stress.StressSettings``
is the class for the attacks registered now.
"""

from __future__ import annotations

import dataclasses
from typing import get_type_hints

from sga_core.stress.base import CommonSettings

_BUILT: dict[tuple, type] = {}


class _Checks:
    """What every StressSettings can do besides holding its fields."""

    def settings_problem(self) -> str | None:
        """Settings each valid alone but not together, and the lists' items (params.from_dict
        asks, so a bad setting is refused before any model loads): the common settings'
        checks, then each attack's :meth:`~sga_core.stress.base.Attack.settings_problem`."""
        for check in _checks():
            problem = check(self)
            if problem:
                return problem
        return None

    def check(self) -> None:
        """ConfigError naming the first bad setting (settings built without from_dict)."""
        from sga_core.params import ConfigError, validate_fields

        validate_fields(self)
        problem = self.settings_problem()
        if problem:
            raise ConfigError(problem)


def _checks() -> list:
    from sga_core.stress.attacks import attacks

    out, seen = [CommonSettings.settings_problem], set()
    for cls in attacks():
        func = cls.settings_problem.__func__
        if func not in seen:  # attacks that share a base share its check
            seen.add(func)
            out.append(cls.settings_problem)
    return out


def settings_class() -> type:
    """The StressSettings dataclass of the attacks registered now (built once per set of
    attacks): the common fields, then each attack's in display order. Two attacks may share
    a setting only by sharing its declaration (a base class's ``Settings``)."""
    from sga_core.stress.attacks import attacks

    sources = (CommonSettings, *dict.fromkeys(c.Settings for c in attacks() if c.Settings))
    built = _BUILT.get(sources)
    if built is not None:
        return built
    owners: dict[str, tuple[type, dataclasses.Field]] = {}
    specs = []
    for source in sources:
        hints = get_type_hints(source)
        for f in dataclasses.fields(source):
            if f.name in owners:
                if owners[f.name][1] is not f:
                    raise ValueError(f"stress setting {f.name!r} is declared twice: by "
                                     f"{owners[f.name][0].__qualname__} and "
                                     f"{source.__qualname__}")
                continue
            owners[f.name] = (source, f)
            specs.append((f.name, hints[f.name], dataclasses.field(
                default=f.default, default_factory=f.default_factory, metadata=f.metadata)))
    cls = dataclasses.make_dataclass(
        "StressSettings", specs, bases=(_Checks,),
        namespace={"__module__": __name__,
                   "__doc__": "The stress test's settings: the common ones and every "
                              "registered attack's (sga_core.stress.settings)."})
    _BUILT[sources] = cls
    return cls

