"""Every registered evaluation protocol meets the contract: a name, a title, the code it
follows, a one-line description, settings that go into summary.json; and every list of
protocol names (the config's choices, the CLI's choices, the metric catalog's) is the
registry's, so a new protocol is one ``register_protocol`` call."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sga_core.cli import build_parser
from sga_core.config import EvalConfig
from sga_core.metrics import catalog
from sga_core.params import ConfigError, field_specs, from_dict
from sga_core.protocols import (
    DEVIATIONS,
    PROMPT_FORMATS,
    PROTOCOLS,
    Protocol,
    get_protocol,
    protocol_names,
    register_protocol,
)


@pytest.mark.parametrize("name", protocol_names())
def test_protocol_contract(name):
    p = get_protocol(name)
    assert p.name == name == name.strip().lower()
    assert p.title and p.reference and p.describe().startswith(p.title)
    assert p.prompt_format in PROMPT_FORMATS
    assert json.loads(json.dumps(p.settings()))["name"] == name
    # the config accepts it, and both CLI flags that name a protocol parse it
    assert from_dict(EvalConfig, {"protocol": name}).protocol == name
    parser = build_parser(["eval"])
    assert parser.parse_args(["eval", "RUN", "--protocol", name]).protocol == name
    args = parser.parse_args(["prepare", "--forget", "f.jsonl", "--eval-protocol", name])
    assert args.eval_protocol == name


def test_every_list_of_protocol_names_is_the_registry():
    names = protocol_names()
    assert names == tuple(PROTOCOLS) and names[0] == "demo"
    spec = next(s for s in field_specs(EvalConfig) if s["name"] == "protocol")
    assert tuple(spec["choices"]) == names
    assert tuple(catalog.PROTOCOL_NAMES) == names
    assert set(catalog.NOT_COPYRIGHT) == set(names) - {"copyright"}
    assert catalog.problems() == []
    parser = build_parser(["eval"])
    for argv, dest in ((["eval", "RUN"], "protocol"),
                       (["prepare", "--forget", "f.jsonl"], "eval_protocol")):
        with pytest.raises(SystemExit):
            parser.parse_args([*argv, f"--{dest.replace('_', '-')}", "nosuch"])
    with pytest.raises(ConfigError, match="protocol"):
        from_dict(EvalConfig, {"protocol": "nosuch"})
    assert {d[0] for d in DEVIATIONS} <= set(names)


def test_register_protocol_refuses_a_second_entry_of_a_name():
    with pytest.raises(ValueError, match="registered twice"):
        register_protocol(dataclasses.replace(get_protocol("tofu")))
    with pytest.raises(ValueError, match="lower-case"):
        register_protocol(Protocol("Mine", "Mine", "here"))
    assert protocol_names() == ("demo", "tofu", "muse", "copyright", "wmdp")
