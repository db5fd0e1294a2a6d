"""The contract every normals backend meets (tests/unit/normals/test_normals_contract.py): a name, a
docstring, a description, a ``Config`` of ``param()`` fields with help, its settings as CLI
flags (typed by the Config), a source a normal answer may name, and a page that offers it
and draws its settings form."""

from __future__ import annotations

import dataclasses

from sga_core.cli import build_parser
from sga_core.cli.data import normals_options
from sga_core.data import NORMAL_SOURCES
from sga_core.normals import get_backend  # noqa: F401 (the tests use it too)
from sga_core.params import field_specs


def check_declaration(name: str) -> None:
    b = get_backend(name)
    assert b.name == name and b.description.strip(), name
    assert (b.generate.__doc__ or "").strip(), f"{name}: generate has no docstring"
    assert dataclasses.is_dataclass(b.config) and (b.config.__doc__ or "").strip()
    for spec in field_specs(b.config):
        assert (spec.get("help") or "").strip(), f"{name}.{spec['name']}: no help"
    assert not {"api_key", "client", "progress"} & set(b.settings()), \
        f"{name}: secrets and callables are runtime options, never settings"
    assert name in NORMAL_SOURCES


def flag_values(name: str) -> tuple[list[str], dict]:
    """A command line giving every setting of backend ``name`` its default, and the
    defaults (settings whose default is None are left to the backend)."""
    argv, expected = [], {}
    for spec in field_specs(get_backend(name).config):
        flag, value = "--" + spec["name"].replace("_", "-"), spec["default"]
        if value is None or spec["kind"] == "dict":
            continue
        if spec["kind"] == "bool":
            argv.append(flag if value else flag.replace("--", "--no-", 1))
        elif spec["kind"] == "list":
            argv += [flag, ",".join(map(str, value))]
        else:
            argv += [flag, str(value)]
        expected[spec["name"]] = value
    return argv, expected


def check_cli(name: str) -> None:
    argv, expected = flag_values(name)
    args = build_parser(["normals"]).parse_args(
        ["normals", "--backend", name, "--forget", "f.jsonl", "--retain", "r.jsonl",
         "--out", "o.jsonl", "--seed", "3", *argv])
    options = normals_options(args)
    assert options.pop("seed") == 3
    if get_backend(name).needs_retain:
        assert options.pop("retain_rows") == "r.jsonl"
    assert options == expected
    for key, value in expected.items():
        assert type(options[key]) is type(value), (name, key, options[key])
