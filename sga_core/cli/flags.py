"""Command-line flags shared by the commands: typed-config flags (one per ``param()``
field), the method chosen on the command line, field maps, evaluation sets and protocol
flags, progress lines."""

from __future__ import annotations

import argparse
import sys

from sga_core.params import ConfigError, field_specs
from sga_core.protocols import protocol_names

PROTOCOL_CHOICES = list(protocol_names())  # every registered evaluation protocol


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def help_escaped(text: str) -> str:
    """A help text from a setting's metadata as argparse takes it: argparse formats help
    with ``%`` (``%(default)s``), so a literal ``%`` (``the job array's %N throttle``) is
    written ``%%``, else ``--help`` fails with a traceback."""
    return text.replace("%", "%%")


def _add_flag(parser, flag: str, dest: str, specs: list[dict], help_text: str) -> None:
    """One flag for the fields ``specs`` (one field, or one per owner of a shared name)."""
    kwargs = {"dest": dest, "default": None, "help": help_escaped(help_text)}
    if all(spec["kind"] == "bool" for spec in specs):
        parser.add_argument(flag, action=argparse.BooleanOptionalAction, **kwargs)
        return
    choices = {tuple(spec.get("choices") or ()) for spec in specs}
    if len(choices) == 1 and () not in choices:
        kwargs["choices"] = list(choices.pop())
    parser.add_argument(flag, metavar=specs[0]["name"].upper(), **kwargs)


def add_dataclass_flags(parser, cls, dest_prefix: str, *, clash_prefix: str = "",
                        defaults: dict | None = None, helps: dict | None = None) -> None:
    """One flag per field of dataclass ``cls``, its help and default from the field's
    metadata; unset flags stay None. A field whose flag another option already uses gets
    ``--<clash_prefix>-<name>`` instead (a method's ``max_length`` next to the training one);
    without a ``clash_prefix`` that is a programming error. ``defaults`` (name -> the
    default as the help says it) and ``helps`` (name -> help) replace the field's own where
    the command applies others (``prepare``: its own defaults, by task)."""
    taken = parser._option_string_actions if hasattr(parser, "_option_string_actions") else {}
    for spec in field_specs(cls):
        name = spec["name"]
        if spec["kind"] == "dict":
            continue  # mappings have flags of their own (--map, --eval-set)
        flag = _flag(name)
        if flag in taken:
            if not clash_prefix:
                raise ValueError(f"{cls.__name__}.{name}: flag {flag} is already taken")
            flag = _flag(f"{clash_prefix}_{name}")
        default = (defaults or {}).get(name, repr(spec["default"]))
        help_text = f"{(helps or {}).get(name) or spec.get('help') or ''} (default: {default})"
        _add_flag(parser, flag, f"{dest_prefix}{name}", [spec], help_text)


def add_choice_flags(parser, configs: dict[str, type], dest_prefix: str) -> None:
    """One flag per setting of several alternatives' dataclasses (``configs``: name ->
    dataclass, e.g. the normals backends'), for a command where one of them is chosen: a
    setting several share (``model``) is one flag, its help saying what each one reads it as
    and its default there. Unset flags stay None (each alternative's own default applies);
    a flag another option already uses is a programming error."""
    taken = parser._option_string_actions if hasattr(parser, "_option_string_actions") else {}
    shared: dict[str, list[tuple[str, dict]]] = {}
    for owner, cls in configs.items():
        for spec in field_specs(cls):
            if spec["kind"] != "dict":
                shared.setdefault(spec["name"], []).append((owner, spec))
    for name, owners in shared.items():
        flag = _flag(name)
        if flag in taken:
            raise ValueError(f"{', '.join(o for o, _ in owners)}: setting {name!r}: flag "
                             f"{flag} is already taken")
        said: dict[str, list[str]] = {}  # owners that say the same share one sentence
        for owner, spec in owners:
            said.setdefault(f"{spec.get('help') or ''} (default: {spec['default']!r})",
                            []).append(owner)
        help_text = "; ".join(f"{', '.join(who)}: {text}" for text, who in said.items())
        _add_flag(parser, flag, f"{dest_prefix}{name}", [s for _, s in owners], help_text)


def chosen_method(argv: list[str] | None) -> str:
    """The method a ``train`` command line is about: ``--method``, else its ``--preset``'s,
    else sga. Only that method's settings become flags, each with its own default."""
    argv = list(sys.argv[1:] if argv is None else argv)
    value = {}
    for i, arg in enumerate(argv):
        for key in ("--method", "--preset"):
            if arg == key and i + 1 < len(argv):
                value[key] = argv[i + 1]
            elif arg.startswith(key + "="):
                value[key] = arg.split("=", 1)[1]
    if "--method" in value:
        return value["--method"]
    if "--preset" in value:
        from sga_core.presets import load_preset

        try:
            return load_preset(value["--preset"], keep_run_fields=True).get("method", "sga")
        except ConfigError:
            pass  # reported when the preset is read for real
    return "sga"


def add_map_flag(parser) -> None:
    parser.add_argument("--map", action="append", dest="field_map",
                        metavar="FILE_FIELD=FIELD",
                        help="read a data file's field under the workbench's name, e.g. "
                             "--map prompt=question --map response=answer (repeatable; "
                             "applies to every data file the command reads)")


def field_map(args) -> dict[str, str] | None:
    """The ``--map`` flags as a mapping (None when none were given)."""
    from sga_core.data.mapping import parse_map

    return parse_map(getattr(args, "field_map", None)) or None


def collect(args: argparse.Namespace, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in vars(args).items()
            if k.startswith(prefix) and v is not None}


# ------------------------------------------------------------------------------------------


def parse_sets(items: list[str] | None) -> dict[str, str]:
    """``--set name=path`` flags -> {name: path}."""
    out: dict[str, str] = {}
    for item in items or []:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ConfigError(f"--set {item!r}: expected NAME=PATH")
        out[name.strip()] = path.strip()
    return out


def protocol_overrides(args) -> dict:
    """``eval``'s protocol flags (only those given)."""
    ov = {"protocol": args.protocol, "prompt_format": args.prompt_format,
          "lm_eval_tasks": args.lm_eval_task, "lm_eval_limit": args.lm_eval_limit,
          "lm_eval_include": args.lm_eval_include, "retrained_auc": args.retrained_auc,
          "layer_view": getattr(args, "layer_view", None),
          "tuned_lens": getattr(args, "tuned_lens", None),
          "mia_gradnorm": getattr(args, "mia_gradnorm", None)}
    return {k: v for k, v in ov.items() if v is not None}


def apply_eval_flags(base: dict, args) -> None:
    """``train``'s --eval/--no-eval, --eval-reference and --eval-set into ``base['eval']``."""
    ev = base.setdefault("eval", {})
    if getattr(args, "eval_enabled", None) is not None:
        ev["enabled"] = args.eval_enabled
    if getattr(args, "eval_reference", None):
        ev["reference"] = args.eval_reference
    if getattr(args, "eval_protocol", None):
        ev["protocol"] = args.eval_protocol
    sets = parse_sets(getattr(args, "eval_set", None))
    if sets:
        ev["sets"] = {**(ev.get("sets") or {}), **sets}
    if not ev:
        base.pop("eval")


def _eval_progress():
    """A progress printer for evaluations: '[HH:MM:SS] eval: stage done/total' lines (the
    format run_foreground echoes), at most one per stage every 2 seconds."""
    import time

    state = {"stage": None, "t": 0.0}

    def progress(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage != state["stage"] or done >= total or now - state["t"] >= 2.0:
            state.update(stage=stage, t=now)
            print(f"[{time.strftime('%H:%M:%S')}] eval: {stage} {done}/{total}", flush=True)

    return progress
