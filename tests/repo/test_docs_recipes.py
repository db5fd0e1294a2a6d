"""The contributing guide's "Add a method" recipe (docs/contributing.md) works as written:
its example file, dropped into the methods package, is found by discovery and offered by the
CLI and the Train page, and it meets the method contract (tests/helpers/method_contract.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import sga_core.methods as methods
from tests.helpers import method_contract as contract
from tests.helpers.ui import open_page

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "contributing.md"


def recipe(heading: str) -> tuple[str, str]:
    """(file name, code) of the first python block after ``heading`` in the contributing guide."""
    text = GUIDE.read_text()
    section = text[text.index(heading):]
    name = re.search(r"`sga_core/methods/(\w+\.py)`", section).group(1)
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return name, code


@pytest.fixture()
def guide_method(tmp_path):
    name, code = recipe("## Add a method")
    assert len(code.splitlines()) < 80
    folder = tmp_path / "more_methods"
    folder.mkdir()
    (folder / name).write_text(code)
    methods.__path__.append(str(folder))
    before = set(methods.REGISTRY)
    methods._discover()
    added = set(methods.REGISTRY) - before
    yield added
    methods.__path__.remove(str(folder))
    for n in added:
        methods.REGISTRY.pop(n)
    sys.modules.pop(f"sga_core.methods.{name[:-3]}", None)


def test_the_example_method_is_discovered_and_meets_the_contract(
        guide_method, tiny_model_dir, demo_dir, idk_normals_file, tmp_path, capsys):
    assert guide_method == {"ga-ceiling"}
    from sga_core.cli import main
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    with pytest.raises(SystemExit):
        main(["train", "--method", "ga-ceiling", "--help"])
    assert "(default: 8.0)" in capsys.readouterr().out
    contract.check_flags_and_yaml("ga-ceiling", demo_dir / "forget.jsonl", idk_normals_file)
    model = load_model(str(tiny_model_dir))
    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    contract.check_units_loss_and_gradients("ga-ceiling", model, enc,
                                            contract.method_data(demo_dir))
    contract.check_one_training_step("ga-ceiling", tiny_model_dir, demo_dir / "forget.jsonl",
                                     demo_dir / "retain.jsonl", idk_normals_file,
                                     tmp_path / "run")


def test_the_train_page_offers_the_example_method(guide_method, ui_env):
    at = open_page("app_pages/train.py")
    assert "GA with a ceiling (bounded gradient ascent)" in at.selectbox(key="train.method").options
    at.selectbox(key="train.method").set_value("ga-ceiling").run()
    assert not at.exception
    assert at.number_input(key="train.f.m.ga-ceiling.ceiling").value == 8.0
