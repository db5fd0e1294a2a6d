"""Method settings as CLI flags (docs/decisions/008-typed-param-configs.md): only the chosen
method's settings, each with its own default; a setting named like a training flag cannot break the
CLI."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from sga_core.cli import build_parser, build_train_config, main
from sga_core.config import TrainConfig
from sga_core.methods import REGISTRY, get_method, method_names
from sga_core.methods.base import Method
from sga_core.params import field_specs, param


def train_help(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(["train", *argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def flag_help(text: str, flag: str) -> str:
    """The help text of one flag in argparse's --help output (joined lines)."""
    m = re.search(rf"^  {re.escape(flag)}\b(.*?)(?=^  -|\Z)", text, re.S | re.M)
    assert m, f"{flag} not in help"
    return " ".join(m.group(1).split())


@pytest.mark.parametrize("name", method_names())
def test_each_method_help_names_its_own_defaults(name, capsys):
    text = train_help(capsys, "--method", name)
    for spec in field_specs(get_method(name).Config):
        flag = "--" + spec["name"].replace("_", "-")
        assert f"(default: {spec['default']!r})" in flag_help(text, flag)


def test_shared_setting_shows_each_methods_default(capsys):
    assert "(default: 0.1)" in flag_help(train_help(capsys, "--method", "npo"), "--beta")
    assert "(default: 1.0)" in flag_help(
        train_help(capsys, "--method", "graddiff"), "--retain-weight")
    assert "(default: 0.0)" in flag_help(
        train_help(capsys, "--method", "npo"), "--retain-weight")


@pytest.fixture()
def clashing_method():
    @dataclass
    class ClashConfig:
        max_length: int = param(77, "A setting named like a training flag.", min=1, max=999)
        beta: float = param(0.33, "A setting named like NPO's.", min=0.0, max=5.0)

    class Clash(Method):
        name = "clash-test"
        title = "a method whose settings clash"
        Config = ClashConfig

    yield Clash
    REGISTRY.pop("clash-test", None)


def test_a_clashing_setting_gets_a_method_prefix(clashing_method, capsys, tmp_path):
    text = train_help(capsys, "--method", "clash-test")
    assert "(default: 77)" in flag_help(text, "--clash-test-max-length")
    assert "(default: 256)" in flag_help(text, "--max-length")  # the training one
    assert "(default: 0.33)" in flag_help(text, "--beta")
    argv = ["train", "--method", "clash-test", "--forget", "f.jsonl", "--max-length", "64",
            "--clash-test-max-length", "5", "--beta", "2"]
    cfg = TrainConfig.from_dict(build_train_config(build_parser(argv).parse_args(argv)))
    assert cfg.method_args == {"max_length": 5, "beta": 2.0}
    assert cfg.training.max_length == 64
    # the registry holding such a method breaks no other command
    assert main(["runs", "list", "--runs-dir", str(tmp_path)]) == 0
    assert "no runs" in capsys.readouterr().out


def test_another_methods_setting_is_refused_by_name(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--method", "ga", "--beta", "0.2", "--forget", "f.jsonl"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--beta" in err and "'ga'" in err


def test_the_preset_decides_the_method_of_the_flags(tmp_path):
    preset = tmp_path / "npo.yaml"
    preset.write_text("method: npo\nmethod_args: {beta: 0.5}\n")
    argv = ["train", "--preset", str(preset), "--beta", "0.7", "--forget", "f.jsonl"]
    cfg = TrainConfig.from_dict(build_train_config(build_parser(argv).parse_args(argv)))
    assert cfg.method == "npo" and cfg.method_args["beta"] == 0.7


def _parsers(parser, path=()):
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def test_every_commands_help_prints_even_with_a_percent_in_a_setting():
    """argparse formats help with ``%``: a setting's help holding a literal one (the cluster
    profile's ``%N throttle``) made ``cluster set --help`` and ``cluster preview --help``
    print a traceback."""
    from sga_core.cli import build_parser

    seen = []
    for path, parser in _parsers(build_parser()):
        seen.append(" ".join(path))
        assert parser.format_help()
    assert "cluster" in seen
    cluster = dict(_parsers(build_parser()))[("cluster",)]
    assert "%N throttle" in cluster.format_help().replace("\n", " ").replace("  ", " ")
