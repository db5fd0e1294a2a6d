"""The Train page's last values per project, on disk (``train_form.json`` in the project's
folder), so that a browser reload or a new session starts the form from them instead of
from the defaults (a Launch after a reload used to run with the defaults, silently).

The Train page is the one writer (:func:`save_train_form`, atomic, only when a value
changed). :func:`load_train_form` never raises: an unreadable file, or a value that no
longer fits its field (a number out of bounds, a choice that went away, text where a number
belongs, a field or method that no longer exists), is left out with a note saying so, and
that field starts from its default."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from sga_core.fileio import atomic_write_json, now_iso

FILE = "train_form.json"
PREFIX = "train."
#: never carried over: a run id names one run; the rest are page state, not form values
SKIP = ("train.run_id",)
_FIELD = re.compile(r"^train\.f\.(t|ta|l|m\.[A-Za-z0-9_-]+)\.([A-Za-z0-9_]+)(\.exact|\.slider)?$")


def _config_class(group: str):
    from sga_core.config import LaunchConfig, TrainingArgs
    from sga_core.methods import get_method

    if group in ("t", "ta"):
        return TrainingArgs
    if group == "l":
        return LaunchConfig
    return get_method(group[2:]).Config  # "m.<method>": KeyError/ValueError when it is gone


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, bool, int)) or (
        isinstance(value, float) and math.isfinite(value))


def _shown(value: Any) -> str:
    """A number as a note shows it, however many digits it has."""
    text = f"{value:g}" if isinstance(value, float) else repr(value)
    return text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"


def check_value(key: str, value: Any) -> str | None:
    """Why a stored value cannot go back into field ``key`` (None when it can)."""
    if not isinstance(key, str) or not key.startswith(PREFIX) or key in SKIP:
        return "not a Train form field"
    if not (_scalar(value) or (isinstance(value, list) and all(map(_scalar, value)))):
        return f"{str(value)[:40]!r} is not a form value"
    m = _FIELD.match(key)
    if not m:
        return None  # a page-level field (method, model, ...): the page checks its options
    from sga_core.params import field_specs

    try:
        specs = {s["name"]: s for s in field_specs(_config_class(m.group(1)))}
    except Exception:  # noqa: BLE001 - a method that no longer exists
        return f"method {m.group(1)[2:]!r} no longer exists"
    spec = specs.get(m.group(2))
    if spec is None:
        return f"{m.group(2)!r} is no longer a setting"
    kind = spec["kind"]
    if spec.get("choices"):
        return None if value in list(spec["choices"]) else \
            f"{value!r} is not one of {', '.join(map(str, spec['choices']))}"
    if kind == "bool":
        return None if isinstance(value, bool) else f"{value!r} is not true/false"
    if kind in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                kind == "int" and isinstance(value, float) and not value.is_integer()):
            return f"{_shown(value)} is not {'an integer' if kind == 'int' else 'a number'}"
        lo, hi = (spec["slider"] if m.group(3) == ".slider" and spec.get("slider")
                  else (spec.get("min"), spec.get("max")))
        # compared as they are: float() of an integer of hundreds of digits overflows
        too_big = abs(value) > 2 ** 63 if isinstance(value, int) else False
        if too_big or (lo is not None and value < lo) or (hi is not None and value > hi):
            return f"{_shown(value)} is outside {lo if lo is not None else '-inf'}.." \
                   f"{hi if hi is not None else 'inf'}"
        return None
    return None if isinstance(value, str) else f"{value!r} is not text"


def load_train_form(project) -> tuple[dict[str, Any], list[str]]:
    """The stored values ``{widget key: value}`` that still fit, and a note per value (or
    file) left out; ({}, []) when nothing was stored."""
    path = project.path / FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, []
    except (OSError, ValueError) as exc:
        return {}, [f"{FILE} is unreadable ({exc}); the form starts from its defaults"]
    except RecursionError:
        return {}, [f"{FILE} is unreadable (nested too deeply); the form starts from its "
                    "defaults"]
    values = data.get("values") if isinstance(data, dict) else None
    if not isinstance(values, dict):
        return {}, [f"{FILE} holds no form values; the form starts from its defaults"]
    kept, notes = {}, []
    for key, value in values.items():
        problem = check_value(key, value)
        if problem is None:
            kept[key] = value
        elif key not in SKIP:
            notes.append(f"{FILE}: {key.removeprefix(PREFIX)} = {problem}; it starts from "
                         "its default")
    return kept, notes


def save_train_form(project, values: dict[str, Any]) -> bool:
    """Keep the form's values (only those that fit, see :func:`check_value`); written
    atomically, and only when they differ from what is stored. Returns True if written."""
    clean = {k: v for k, v in sorted(values.items()) if check_value(k, v) is None}
    stored, _ = load_train_form(project)
    if stored == clean and (project.path / FILE).exists():
        return False
    atomic_write_json(project.path / FILE, {"saved_at": now_iso(), "values": clean})
    return True


__all__ = ["FILE", "check_value", "load_train_form", "save_train_form"]
