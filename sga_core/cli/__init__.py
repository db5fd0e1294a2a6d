"""``python -m sga_core <command>``: everything the browser does, from the shell
(docs/spec.md#8-the-command-line).

One module per group of commands (:mod:`~sga_core.cli.data`, :mod:`~sga_core.cli.training`,
:mod:`~sga_core.cli.evaluation`, :mod:`~sga_core.cli.runs`, :mod:`~sga_core.cli.report`,
:mod:`~sga_core.cli.cluster`), each adding its parsers; the flags they share live in
:mod:`~sga_core.cli.flags`."""

from __future__ import annotations

import argparse
import functools
import sys

from sga_core.cli import cluster, data, evaluation, report, runs, stress, study, training
from sga_core.cli.flags import _flag, chosen_method
from sga_core.cli.training import build_train_config
from sga_core.params import ConfigError, field_specs


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command-line parser; ``argv`` decides which method's settings ``train`` offers."""
    p = argparse.ArgumentParser(prog="python -m sga_core", allow_abbrev=False,
                                description="SGA Workbench: LLM unlearning with smoothed "
                                            "gradient ascent.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser = functools.partial(sub.add_parser, allow_abbrev=False)  # no --r for --retain

    for group in (data, training, study, evaluation, stress, runs, report, cluster):
        group.add_parsers(sub, argv)
    return p


def main(argv: list[str] | None = None) -> int:
    from sga_core.data import DataError
    from sga_core.model.loading import ModelError

    argv = joined_values(sys.argv[1:] if argv is None else list(argv))
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:
        hint = ""
        if args.command == "train":
            from sga_core.methods import REGISTRY

            method = chosen_method(argv)
            if method in REGISTRY:
                flags = [_flag(s["name"]) for s in field_specs(REGISTRY[method].Config)]
                hint = (f" (method {method!r} takes: {', '.join(flags) or 'no settings'}; "
                        f"`train --method {method} --help` lists them)")
        parser.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    try:
        check_folders(args)
        return args.func(args)
    except (ConfigError, DataError, ModelError, ValueError) as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path the system refuses: too long, not a folder, no access
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {one_line(f'{where}{exc.strerror or exc}')}", file=sys.stderr)
        return 2


def one_line(message: str) -> str:
    """An error message on one line, with what a terminal would act on (ESC, bidi
    overrides, other controls from a path or a name the person gave) written escaped."""
    from sga_core.data.errors import printable

    return printable(" ".join(message.split()))


# flags whose value may start with '-' and is no number (argparse would take '-0.8,-0.4'
# for an option and say the flag 'expected one argument')
DASH_VALUES = ("--sweep-values",)


def joined_values(argv: list[str]) -> list[str]:
    """``argv`` with ``--flag VALUE`` written ``--flag=VALUE`` for :data:`DASH_VALUES`."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in DASH_VALUES and i + 1 < len(argv) and argv[i + 1].startswith("-") \
                and not argv[i + 1].startswith("--"):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def check_folders(args) -> None:
    """``--workspace`` and ``--runs-dir`` name folders (made when missing): an existing file
    there is a one-line error naming the flag and the path, not a traceback later on."""
    from pathlib import Path

    for dest, flag in (("workspace", "--workspace"), ("runs_dir", "--runs-dir")):
        value = getattr(args, dest, None)
        if not value:
            continue
        path = Path(value).expanduser()
        try:
            is_file = path.exists() and not path.is_dir()
        except OSError as exc:
            raise ConfigError(f"{flag} {value}: {exc.strerror or exc}") from None
        if is_file:
            raise ConfigError(f"{flag} {value}: is a file, not a folder; give a folder (it "
                              "is made when missing)")
    check_out(args)


# what each command's --out names: a file it writes, or a folder it writes into
OUT_IS_FILE = {"normals": True, "rstar": True, "eval": False, "stress": False}


def check_out(args) -> None:
    """``--out`` names a file (``normals``, ``rstar``) or a folder (``eval``): the other
    kind already there is a one-line error naming the flag and the path before any work is
    done (a generation or an evaluation that could only fail when it writes its result)."""
    from pathlib import Path

    value = getattr(args, "out", None)
    wants_file = OUT_IS_FILE.get(getattr(args, "command", None))
    if not value or wants_file is None:
        return
    path = Path(value).expanduser()
    try:
        is_dir, exists = path.is_dir(), path.exists()
    except OSError as exc:
        raise ConfigError(f"--out {value}: {exc.strerror or exc}") from None
    if wants_file and is_dir:
        raise ConfigError(f"--out {value}: is a folder; give the file to write")
    if not wants_file and exists and not is_dir:
        raise ConfigError(f"--out {value}: is a file, not a folder; give a folder (it is "
                          "made when missing)")


__all__ = ["build_parser", "build_train_config", "main"]
