"""Typed settings: ``param()`` dataclass fields carry their help text, bounds and choices in
``metadata``, so one dataclass drives the CLI flags, the browser forms and the YAML files (in
the manner of H2O LLM Studio). :func:`from_dict` builds and checks one from a mapping.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import field
from typing import Any, get_type_hints


class ConfigError(ValueError):
    """A configuration value that is missing, unknown or out of range; names the key."""


def param(default: Any, help: str, *, min: float | None = None, max: float | None = None,
          choices: tuple | None = None, label: str | None = None, advanced: bool = False,
          slider: tuple[float, float] | None = None, hidden: bool = False):
    """A dataclass field with the metadata that forms and CLI flags are built from.

    ``slider=(lo, hi)``: forms show a slider over that range next to an exact box that
    accepts the whole ``min..max`` range (SGA's r: a slider -10..1, exact values to -100).
    ``hidden``: read from files and flags, but forms do not show it (an old spelling)."""
    meta = {"help": help, "min": min, "max": max, "choices": choices, "label": label,
            "advanced": advanced, "slider": slider, "hidden": hidden}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda d=default: type(d)(d), metadata=meta)
    return field(default=default, metadata=meta)


def type_kind(typ) -> str:
    """'bool', 'int', 'float', 'str', 'list' or 'dict' for an annotation (Optional unwrapped)."""
    text = typ.__name__ if isinstance(typ, type) else str(typ)
    for kind in ("bool", "int", "float", "str", "list", "dict"):
        if text == kind or text.startswith(kind + "[") or text.startswith(kind + " "):
            return kind
    return "str"


def field_specs(cls) -> list[dict]:
    """Describe a config dataclass for form builders: name, type, kind, optional, default,
    help and bounds."""
    hints = get_type_hints(cls)
    specs = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        typ = hints[f.name]
        specs.append({"name": f.name, "type": typ, "kind": type_kind(typ),
                      "optional": "None" in str(typ), "default": default, **f.metadata})
    return specs


def _coerce(value: Any, typ: Any, key: str) -> Any:
    """Coerce YAML/CLI values to the annotated type, with an error naming the key."""
    text = str(typ)
    optional = "None" in text or "Optional" in text
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{key}: a value is required")
    try:
        if typ is bool or text.startswith("bool"):
            if isinstance(value, str):
                low = value.strip().lower()
                if low in ("true", "1", "yes", "on"):
                    return True
                if low in ("false", "0", "no", "off"):
                    return False
                raise ValueError(value)
            if isinstance(value, bool) or (type(value) is int and value in (0, 1)):
                return bool(value)
            raise ValueError(value)  # a list or a mapping is no true or false
        if (typ in (int, float) or text.startswith(("int", "float"))) and \
                isinstance(value, bool):
            raise ValueError(value)  # true is no number (it read as lr = 1.0)
        if typ is int or text.startswith("int"):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if typ is float or text.startswith("float"):
            return float(value)
        if typ is str or text.startswith("str"):
            return str(value)
        if text.startswith("list"):
            if isinstance(value, str):
                value = [v for v in re.split(r"[,\s]+", value.strip()) if v]
            inner = int if "int" in text else float if "float" in text else str
            return [_item(v, inner) for v in value]
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
        raise ConfigError(f"{key}: {_unreadable(value, text)}") from None
    return value


#: a type as a person names it
_KINDS = {"int": "a whole number", "float": "a number", "bool": "true or false"}


def _unreadable(value: Any, text: str) -> str:
    """Why ``value`` is not a ``text`` (a type's name), in words: for a list, the item that
    is not one (``'banana' is not a whole number``) and how to write a list."""
    text = re.sub(r"<class '(\w+)'>", r"\1", text)
    inner = next((k for k in ("int", "float", "bool") if k in text), None)
    if text.startswith("list") and isinstance(value, list) and inner:
        bad = next((v for v in value if not _readable(v, inner)), None)
        if bad is not None:
            return (f"{bad!r} is not {_KINDS[inner]} (a list is written with commas or "
                    f"spaces, e.g. 0, 3, 7)")
    if text in _KINDS or text.startswith(tuple(_KINDS)):
        return f"{value!r} is not {_KINDS[inner]}" if inner else f"cannot read {value!r}"
    return f"cannot read {value!r} as {text}"


def _readable(value: Any, inner: str) -> bool:
    try:
        _item(value, {"int": int, "float": float}.get(inner, str))
        return True
    except (TypeError, ValueError, OverflowError):
        return False


def _item(value: Any, inner: type) -> Any:
    """One item of a list setting, read with the rule of a single setting of its type: a
    number list refuses true/false, and a whole-number list refuses 1.5 (it would read 1)."""
    if inner is not str and isinstance(value, bool):
        raise ValueError(value)
    if inner is int and isinstance(value, float) and not value.is_integer():
        raise ValueError(value)
    return inner(value)


def validate_fields(obj, prefix: str = "") -> None:
    """Check bounds and choices declared in field metadata."""
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        key = f"{prefix}{f.name}"
        if v is None or isinstance(v, bool):
            continue
        lo, hi, choices = f.metadata.get("min"), f.metadata.get("max"), f.metadata.get("choices")
        if choices is not None and v not in choices:
            raise ConfigError(f"{key}: {v!r} is not one of {list(choices)}")
        if isinstance(v, (int, float)):
            if v != v:
                raise ConfigError(f"{key}: NaN is not allowed")
            if lo is not None and v < lo:
                raise ConfigError(f"{key}: {v} is below the minimum {lo}")
            if hi is not None and v > hi:
                raise ConfigError(f"{key}: {v} is above the maximum {hi}")


def from_dict(cls, data: dict | None, prefix: str = ""):
    """Build dataclass ``cls`` from a dict: unknown keys and bad values raise ConfigError."""
    data = dict(data or {})
    hints = get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{prefix}{unknown[0]}: unknown setting (known: {sorted(names)})")
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        typ = hints[f.name]
        if dataclasses.is_dataclass(typ):
            kwargs[f.name] = from_dict(typ, data[f.name], f"{prefix}{f.name}.")
        else:
            kwargs[f.name] = _coerce(data[f.name], typ, f"{prefix}{f.name}")
    obj = cls(**kwargs)
    validate_fields(obj, prefix)
    problem = obj.settings_problem() if hasattr(obj, "settings_problem") else None
    if problem:  # settings each valid alone but not together (e.g. r_min above r_max)
        raise ConfigError(f"{prefix}{problem}")
    return obj


def to_dict(obj) -> dict:
    return dataclasses.asdict(obj)


# --- seed lists: the ``training.seeds`` setting ------------------------------------------------

MAX_SEEDS = 100
MAX_SEED = 2**31 - 1


def parse_seeds(text, base: int = 0) -> list[int]:
    """The seeds a launch repeats over: ``""`` -> ``[base]``; a count ``"3"`` -> ``base,
    base+1, base+2``; a list ``"0, 1, 2"`` (or ``"0 1 2"``, ``"[0, 1, 2]"``, or a YAML list)
    -> those seeds, in order, each once. A single number is a count: one explicit seed is
    the ``seed`` setting. ValueError names what is wrong."""
    if isinstance(text, (list, tuple)):
        text = ",".join(str(v) for v in text)
    raw = str(text if text is not None else "").strip().strip("[]()").strip()
    if not raw:
        return [int(base)]
    tokens = [t for t in raw.replace(";", ",").replace(",", " ").split() if t]
    try:
        nums = [int(t) for t in tokens]
    except ValueError:
        bad = next(t for t in tokens if not t.lstrip("-").isdigit())
        raise ValueError(f"seeds: {bad[:40]!r} is not a whole number (give a count such as "
                         "3, or a list such as 0, 1, 2)") from None
    is_list = len(tokens) > 1 or any(c in str(text) for c in ",;[")
    if not is_list:
        count = nums[0]
        if not 1 <= count <= MAX_SEEDS:
            raise ValueError(f"seeds: a count must be 1 to {MAX_SEEDS}, got {count}")
        nums = [int(base) + i for i in range(count)]
    nums = list(dict.fromkeys(nums))
    if len(nums) > MAX_SEEDS:
        raise ValueError(f"seeds: {len(nums)} seeds is too many (at most {MAX_SEEDS})")
    bad = [s for s in nums if not 0 <= s <= MAX_SEED]
    if bad:
        raise ValueError(f"seeds: {bad[0]} is outside 0..{MAX_SEED}")
    return nums
