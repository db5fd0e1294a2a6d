"""Presets: a run's settings saved as YAML (a config.yaml without the run-specific fields), for
the Train page's Presets box and ``train --preset``.

A preset is validated against the typed config before anything uses it (:func:`validate_preset`):
every section must be a mapping, every value of the type its field declares (a list where a
number belongs is refused, not turned into text), the method must exist and its settings fit
its ``Config``. A bad preset raises :class:`ConfigError` with a one-line message naming the
file, the field and the expected type; a good one comes back as a clean dict holding only the
keys it gave, each of its declared type.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

from sga_core.config import (
    DataConfig,
    EvalConfig,
    LaunchConfig,
    TrainingArgs,
    valid_run_id,
)
from sga_core.data.errors import short
from sga_core.model.device import fold_legacy_cpu
from sga_core.params import ConfigError, field_specs, from_dict, to_dict

#: What a preset sets (the Train page saves these).
PRESET_KEYS = ("model", "method", "method_args", "training", "launch", "eval", "notes")
#: The run-specific fields of a config.yaml: kept for ``train --preset``, dropped for the page.
RUN_KEYS = ("run_id", "data", "sweep", "group")
#: The largest preset file read.
MAX_PRESET_BYTES = 1 * 2**20

_SECTIONS = {"training": TrainingArgs, "launch": LaunchConfig, "eval": EvalConfig,
             "data": DataConfig}
_EXPECTED = {"bool": "true or false", "int": "a whole number", "float": "a number",
             "str": "text", "list": "a list", "dict": "a mapping (name: value lines)"}
_BOOL_WORDS = ("true", "false", "yes", "no", "on", "off", "1", "0")
_MAX_PROBE_ROWS = 64


def _got(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (true/false)"
    if isinstance(value, (int, float)):
        return f"the number {short(value)}"
    if isinstance(value, str):
        return f"the text {short(value)}"
    if isinstance(value, (list, tuple)):
        return f"a list {short(value)}"
    if isinstance(value, dict):
        return f"a mapping {short(value)}"
    return type(value).__name__


def _fits(kind: str, value: Any) -> bool:
    """Whether ``value`` may stand for a field of ``kind`` (before the typed conversion)."""
    if kind == "bool":
        return isinstance(value, bool) or (isinstance(value, str)
                                           and value.strip().lower() in _BOOL_WORDS)
    if kind in ("int", "float"):
        if isinstance(value, bool):
            return False
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                return False
        if not isinstance(value, (int, float)):
            return False
        return kind == "float" or (math.isfinite(value) and float(value).is_integer())
    if kind == "str":
        return isinstance(value, (str, int, float)) and not isinstance(value, bool)
    if kind == "list":
        return isinstance(value, str) or (isinstance(value, list) and not any(
            isinstance(v, (list, dict, bool)) or v is None for v in value))
    if kind == "dict":
        return isinstance(value, dict)
    return True


def _mapping(value: Any, key: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected {_EXPECTED['dict']}, got {_got(value)}")
    bad = next((k for k in value if not isinstance(k, str)), None)
    if bad is not None:
        raise ConfigError(f"{key}: setting names are text, got {_got(bad)}")
    return value


def check_section(cls, value: Any, key: str) -> dict:
    """One section (``training``, ``method_args``, ...) checked against dataclass ``cls``:
    the keys it gave, each converted to its field's type."""
    data = _mapping(value, key)
    specs = {s["name"]: s for s in field_specs(cls)}
    for name, item in data.items():
        spec = specs.get(name)
        if spec is None:
            continue  # from_dict names the unknown setting and the known ones
        if item is None and spec["optional"]:
            continue
        if not _fits(spec["kind"], item):
            raise ConfigError(f"{key}.{name}: expected {_EXPECTED[spec['kind']]}, "
                              f"got {_got(item)}")
    try:
        obj = from_dict(cls, data, f"{key}.")
    except ConfigError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:  # a conversion _fits let through
        raise ConfigError(f"{key}: {exc}") from None
    full = to_dict(obj)
    return {name: full[name] for name in data}


def _text(value: Any, key: str) -> str:
    if not _fits("str", value):
        raise ConfigError(f"{key}: expected {_EXPECTED['str']}, got {_got(value)}")
    return str(value)


def _check_training(training: dict) -> None:
    rows = training.get("probe_rows") or []
    if len(rows) > _MAX_PROBE_ROWS:
        raise ConfigError(f"training.probe_rows: at most {_MAX_PROBE_ROWS} rows, "
                          f"got {len(rows)}")
    if any(r < 0 for r in rows):
        raise ConfigError("training.probe_rows: row numbers start at 0")


def _check_eval(ev: dict) -> None:
    for name, path in (ev.get("sets") or {}).items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
            raise ConfigError(f"eval.sets: set name {short(name)} must be 1-64 letters, "
                              "digits, '_' or '-'")
        if not isinstance(path, str) or not path.strip():
            raise ConfigError(f"eval.sets.{name}: expected a file path (text), "
                              f"got {_got(path)}")


def validate_preset(preset: Any, source: str = "preset", *,
                    keep_run_fields: bool = False) -> dict:
    """A preset (the parsed YAML) checked against the typed config: the clean dict, or a
    :class:`ConfigError` whose one-line message starts with ``source`` (a file's base name)
    and names the field and the type it expects. ``keep_run_fields`` keeps ``run_id``,
    ``data``, ``sweep`` and ``group`` (a whole config.yaml given to ``train --preset``);
    otherwise they are dropped, as the Train page saves presets without them."""
    from sga_core.methods import get_method, method_names

    try:
        if not isinstance(preset, dict):
            raise ConfigError("a preset must be a YAML mapping of settings "
                              f"({', '.join(PRESET_KEYS)}), got {_got(preset)}")
        _mapping(preset, "preset")
        known = PRESET_KEYS + RUN_KEYS
        unknown = [k for k in preset if k not in known and k != "base_dir"]
        if unknown:
            raise ConfigError(f"{short(unknown[0])}: unknown setting (a preset has: "
                              f"{', '.join(known)})")
        out: dict[str, Any] = {}
        if "model" in preset:
            out["model"] = _text(preset["model"], "model")
            if not out["model"].strip():
                raise ConfigError("model: expected a model id or folder, got empty text")
        method = preset.get("method", "sga")
        if not isinstance(method, str) or method not in method_names():
            raise ConfigError(f"method: unknown method {short(method)}; known: "
                              f"{', '.join(method_names())}")
        if "method" in preset:
            out["method"] = method
        sections = {"method_args": get_method(method).Config, **_SECTIONS}
        for key, cls in sections.items():
            if key in preset and (key != "data" or keep_run_fields):
                value = preset[key]  # an empty section (null) is no settings; 0 or "" is wrong
                out[key] = check_section(cls, {} if value is None else value, key)
        _check_training(out.get("training", {}))
        _check_eval(out.get("eval", {}))
        if "notes" in preset:
            out["notes"] = "" if preset["notes"] is None else _text(preset["notes"], "notes")
        if keep_run_fields:
            if preset.get("run_id"):
                run_id = _text(preset["run_id"], "run_id")
                if not valid_run_id(run_id):
                    raise ConfigError(f"run_id: {short(run_id)} must be 1-64 lower-case "
                                      "letters, digits or '-', starting with a letter or digit")
                out["run_id"] = run_id
            for key in ("sweep", "group"):
                if preset.get(key) is not None:
                    out[key] = _text(preset[key], key)
        return out
    except ConfigError as exc:
        raise ConfigError(f"{source}: {_one_line(str(exc))}") from None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def parse_preset(text: str, source: str = "preset", *, keep_run_fields: bool = False) -> dict:
    """Parse YAML text (``yaml.safe_load``) and :func:`validate_preset` it; a YAML error, a
    ``!!python`` tag, nesting too deep or a number too long is a one-line ConfigError."""
    import yaml

    from sga_core.fileio import YAMLTooLarge, load_yaml

    try:
        preset = load_yaml(text, source)
    except YAMLTooLarge:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "invalid YAML"
        tag = re.search(r"tag '(tag:yaml\.org,2002:)?([^']*)'", problem)
        if isinstance(exc, yaml.constructor.ConstructorError) and tag and mark:
            raise ConfigError(f"{source}: line {mark.line + 1}: the tag !!{tag.group(2)} is "
                              "not allowed: a preset is plain YAML (mappings, lists, text, "
                              "numbers)") from None
        raise ConfigError(f"{source}: YAML error{at}: {_one_line(problem)}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: YAML error: {_one_line(str(exc))}") from None
    except RecursionError:
        raise ConfigError(f"{source}: the YAML is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise ConfigError(f"{source}: a value cannot be read: {_one_line(str(exc))[:120]}") \
            from None
    if preset is None:
        preset = {}
    return validate_preset(preset, source, keep_run_fields=keep_run_fields)


def load_preset(path: str | os.PathLike, *, keep_run_fields: bool = False) -> dict:
    """Read a preset file and :func:`parse_preset` it; messages name the file's base name."""
    path = Path(path)
    name = path.name
    try:
        if path.stat().st_size > MAX_PRESET_BYTES:
            raise ConfigError(f"{name}: a preset file is at most "
                              f"{MAX_PRESET_BYTES // 2**20} MiB")
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read the preset: "
                          f"{exc.strerror or type(exc).__name__}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    preset = parse_preset(text, name, keep_run_fields=keep_run_fields)
    if isinstance(preset.get("launch"), dict):
        fold_legacy_cpu(preset["launch"])  # an old preset's launch.cpu as launch.device
    return preset


# --- a project's presets (the Train page's Presets box) ----------------------------------------

def list_presets(project) -> list[Path]:
    """Shipped presets, then the project's own."""
    from sga_core.assets import PRESETS_DIR

    return sorted(PRESETS_DIR.glob("*.yaml")) + sorted((project.path / "presets").glob("*.yaml"))


MAX_PRESET_NAME = 64


# letters of other scripts drawn like a Latin letter (after case folding): Cyrillic and
# Greek capitals and small letters that a reader cannot tell from a, b, c, e, ... ('mуrun'
# with a Cyrillic 'у' is 'myrun' in the Load preset list)
LOOK_ALIKES = str.maketrans({
    "\u0430": "a", "\u0432": "b", "\u0435": "e", "\u043a": "k", "\u043c": "m",
    "\u043d": "h", "\u043e": "o", "\u0440": "p", "\u0441": "c", "\u0442": "t",
    "\u0443": "y", "\u0445": "x", "\u0456": "i", "\u0458": "j", "\u0455": "s",
    "\u0501": "d", "\u051b": "q", "\u051d": "w", "\u04bb": "h", "\u04cf": "l",
    "\u03b1": "a", "\u03b2": "b", "\u03b5": "e", "\u03b7": "h", "\u03b9": "i",
    "\u03ba": "k", "\u03bc": "m", "\u03bd": "v", "\u03bf": "o", "\u03c1": "p",
    "\u03c4": "t", "\u03c5": "u", "\u03c7": "x", "\u03b6": "z", "\u0251": "a",
    "\u0131": "i", "\u0261": "g",
})


def preset_key(name: str) -> str:
    """What two preset names must not share: their NFKC form, case-folded, with letters of
    other scripts drawn like Latin ones read as those ('Demo', 'DEMO', the full-width
    'ｄｅｍｏ' and 'dеmo' with a Cyrillic 'е' are one name to a reader)."""
    import unicodedata

    return unicodedata.normalize("NFKC", name).casefold().translate(LOOK_ALIKES)


def save_preset(project, name: str, cfg) -> Path:
    """Save a config as a preset of the project (without its run id, data and sweep). A name
    longer than MAX_PRESET_NAME, or one another preset's differs from only in case or by
    look-alike characters, is a ConfigError (saving under the same name replaces it)."""
    import yaml

    from sga_core.fileio import atomic_write_text

    clean = "".join(ch for ch in name if ch.isalnum() or ch in "-_") or "preset"
    if len(clean) > MAX_PRESET_NAME:
        raise ConfigError(f"preset name {clean[:40]!r}... is {len(clean)} characters long; "
                          f"at most {MAX_PRESET_NAME} are allowed")
    for other in list_presets(project):
        if other.stem != clean and preset_key(other.stem) == preset_key(clean):
            raise ConfigError(f"preset name {clean!r} differs from the existing preset "
                              f"{other.stem!r} only in case or by look-alike characters; "
                              f"choose another name, or save as {other.stem!r} to replace it")
    data = cfg.to_dict()
    for key in RUN_KEYS:
        data.pop(key, None)
    path = project.path / "presets" / f"{clean}.yaml"
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False))
    return path
