"""Every registered normals backend meets the contract (tests/helpers/normals_contract.py): a
declaration (name, docstring, Config with help), its settings through CLI flags, its
choice and settings form on the Normal answers page; and every list of backend names (the
CLI's choices, the page's, the normal answers' sources) is the registry's."""

from __future__ import annotations

import pytest

from sga_core.cli import build_parser
from sga_core.data import NORMAL_SOURCES
from sga_core.normals import backend_names, generate_normals
from sga_core.params import field_specs
from tests.helpers import normals_contract as contract
from tests.helpers.ui import open_page


@pytest.mark.parametrize("name", backend_names())
def test_declaration(name):
    contract.check_declaration(name)


@pytest.mark.parametrize("name", backend_names())
def test_settings_through_cli_flags(name):
    contract.check_cli(name)


def test_every_list_of_backend_names_is_the_registry():
    names = backend_names()
    assert set(names) == {"retrieval", "openai", "local", "idk"}
    assert tuple(NORMAL_SOURCES) == (*names, "manual")
    parser = build_parser(["normals"])
    sub = next(a for a in parser._actions if a.dest == "command").choices["normals"]
    backend = next(a for a in sub._actions if a.dest == "backend")
    assert backend.choices == names and backend.default == "idk"
    # the flags that were written by hand before keep their names
    flags = {f for a in sub._actions for f in a.option_strings}
    assert {"--embedding-model", "--threshold", "--model", "--base-url", "--template",
            "--max-concurrency", "--timeout", "--max-new-tokens"} <= flags
    assert "--api-key" not in flags  # API keys come from the environment only


def test_a_bad_flag_value_is_refused_naming_the_setting():
    from sga_core.cli.data import normals_options
    from sga_core.params import ConfigError

    parser = build_parser(["normals"])
    base = ["normals", "--forget", "f.jsonl", "--retain", "r.jsonl", "--out", "o.jsonl"]
    with pytest.raises(ConfigError, match="threshold"):
        normals_options(parser.parse_args([*base, "--backend", "retrieval", "--threshold",
                                           "lots"]))
    with pytest.raises(ConfigError, match="needs --retain"):
        normals_options(parser.parse_args(["normals", "--forget", "f.jsonl", "--out", "o",
                                           "--backend", "retrieval"]))
    # a flag of another backend does not apply (as before: --threshold with openai)
    args = parser.parse_args([*base, "--backend", "openai", "--threshold", "0.3"])
    assert "threshold" not in normals_options(args)


def test_unknown_options_name_the_backend_s_settings():
    rows = [{"question": "q", "answer": "a"}]
    with pytest.raises(ValueError, match="has no option 'model'.*its options: "
                                         "idk_templates, progress, seed"):
        generate_normals("idk", rows, "qa", 2, model="x")


def test_page_offers_every_backend_with_its_settings_form(ui_env):
    at = open_page("app_pages/normals.py")
    box = at.selectbox(key="normals.backend")
    assert list(box.options) == [f"{n}: {contract.get_backend(n).description}"
                                 for n in backend_names()]
    for name in backend_names():
        at.selectbox(key="normals.backend").set_value(name).run()
        assert not at.exception, (name, at.exception)
        specs = [s for s in field_specs(contract.get_backend(name).config)
                 if not s.get("hidden")]
        keys = {w.key for kind in ("text_input", "number_input", "selectbox", "checkbox",
                                   "slider") for w in at.get(kind)}
        for spec in specs:
            wkey = f"normals.{name}.{spec['name']}"
            assert wkey in keys or f"{wkey}.slider" in keys, (name, spec["name"], keys)
        has_key_box = f"normals.{name}.api_key" in keys
        assert has_key_box == bool(contract.get_backend(name).api_key_env)
