"""Every registered importable benchmark meets the contract: a name, a label, a registered
evaluation protocol, a documented import function, a Config of param() fields with help, its
import options through the ``import`` command's flags, and the Data page's import panel
offering it with its options form, its uploads and (hub benchmarks) the source choice."""

from __future__ import annotations

import dataclasses

import pytest

from sga_core.cli import build_parser
from sga_core.cli.data import import_options
from sga_core.params import field_specs, from_dict
from sga_core.projects.benchmarks import get_importer, importer_names
from sga_core.protocols import protocol_names
from tests.helpers.ui import open_page


@pytest.mark.parametrize("name", importer_names())
def test_declaration(name):
    b = get_importer(name)
    assert b.name == name and b.label.strip() and b.protocol in protocol_names()
    assert (b.run.__doc__ or "").strip() and (b.config.__doc__ or "").strip()
    specs = {s["name"]: s for s in field_specs(b.config)}
    assert all((s.get("help") or "").strip() for s in specs.values()), name
    assert set(b.files) <= set(specs)
    if b.from_hub:
        assert {"online", "from_folder"} <= set(specs)
    if b.variants:  # one option chooses among them
        assert any(set(s.get("choices") or ()) == set(b.variants) for s in specs.values())


@pytest.mark.parametrize("name", importer_names())
def test_options_through_cli_flags(name):
    argv, expected = [], {}
    for spec in field_specs(get_importer(name).config):
        flag, value = "--" + spec["name"].replace("_", "-"), spec["default"]
        if spec["kind"] == "bool":
            argv.append(flag if value else flag.replace("--", "--no-", 1))
        elif value is not None:
            argv += [flag, str(value)]
        expected[spec["name"]] = value
    args = build_parser(["import"]).parse_args(["import", name, *argv])
    config = from_dict(get_importer(name).config, import_options(args))
    assert dataclasses.asdict(config) == expected


def test_every_list_of_benchmarks_is_the_registry():
    names = importer_names()
    assert names == ["tofu", "muse-news", "muse-books", "copyright", "wmdp"]
    parser = build_parser(["import"])
    sub = next(a for a in parser._actions if a.dest == "command").choices["import"]
    assert next(a for a in sub._actions if a.dest == "benchmark").choices == names
    # the flags that were written by hand before keep their names
    assert {"--split", "--from-folder", "--online", "--book", "--retain", "--model",
            "--segment-tokens", "--prompt-tokens", "--name", "--workspace",
            "--overwrite"} <= {f for a in sub._actions for f in a.option_strings}


def test_data_page_offers_every_benchmark_with_its_form(ui_env):
    at = open_page("app_pages/data.py")
    assert list(at.radio(key="bench.kind").options) == [get_importer(n).label
                                                        for n in importer_names()]
    for name in importer_names():
        b = get_importer(name)
        at.radio(key="bench.kind").set_value(name).run()
        assert not at.exception, (name, at.exception)
        keys = {w.key for kind in ("text_input", "number_input", "selectbox", "checkbox",
                                   "radio", "file_uploader") for w in at.get(kind)}
        for spec in field_specs(b.config):
            if spec["name"] in b.files:
                assert f"bench.{spec['name']}" in keys, (name, spec["name"])
            elif not spec.get("hidden"):
                assert f"bench.{name}.{spec['name']}" in keys, (name, spec["name"], keys)
        assert ("bench.source" in keys) == b.from_hub


def test_import_without_the_files_says_what_is_missing(ui_env):
    at = open_page("app_pages/data.py")
    at.radio(key="bench.kind").set_value("copyright").run()
    at.button(key="bench.go").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Give a project name, the book (.txt), the retain corpus (.txt)."]
