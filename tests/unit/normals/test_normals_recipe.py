"""Adding a normals backend is one file: a module that declares a ``param()`` Config and a
``generate`` function with ``register_backend``. Written here into a folder of the test's own
and imported, it shows up in the ``normals`` command (choice, flags, a run), in the sources a
normal answer may name and on the Normal answers page (choice, settings form), with no other
file touched."""

from __future__ import annotations

import importlib
import sys

import pytest

from sga_core.cli import build_parser, main
from sga_core.data import NORMAL_SOURCES, NormalTable
from sga_core.normals import backend_names
from sga_core.normals.registry import unregister_backend
from tests.helpers import normals_contract as contract
from tests.helpers.ui import open_page

BACKEND_FILE = '''
"""Echo: each normal answer is the forget answer after a prefix."""

import time
from dataclasses import dataclass

from sga_core.data import NormalAnswer, NormalTable
from sga_core.normals import GenerationResult, register_backend
from sga_core.params import param


@dataclass
class EchoConfig:
    """Settings of the echo backend."""

    prefix: str = param("Not so:", "Text put before the forget answer.")
    copies_apart: int = param(1, "Spaces between the prefix and the answer.", min=1, max=8)


@register_backend("echo", EchoConfig, description="the forget answer after a prefix")
def generate(forget_rows, kind, k, *, prefix="Not so:", copies_apart=1, seed=0,
             progress=None):
    """K-1 copies of each forget answer after ``prefix``."""
    start = time.perf_counter()
    answers = [NormalAnswer(forget_index=i, k=j, source="echo",
                            text=prefix + " " * copies_apart + f"{row.get('answer')} #{j}")
               for i, row in enumerate(forget_rows) for j in range(1, k)]
    if progress is not None:
        progress(len(forget_rows), len(forget_rows))
    return GenerationResult("echo", NormalTable(answers, k), len(forget_rows),
                            elapsed_s=time.perf_counter() - start)
'''


@pytest.fixture
def echo_backend(tmp_path, monkeypatch):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "echo_backend.py").write_text(BACKEND_FILE)
    monkeypatch.syspath_prepend(str(folder))
    assert "echo" not in backend_names()
    module = importlib.import_module("echo_backend")
    yield module
    unregister_backend("echo")
    sys.modules.pop("echo_backend", None)


def test_a_backend_is_one_file(echo_backend, tmp_path, demo_dir, capsys):
    assert "echo" in backend_names() and "echo" in NORMAL_SOURCES
    contract.check_declaration("echo")
    contract.check_cli("echo")
    parser = build_parser(["normals"])
    sub = next(a for a in parser._actions if a.dest == "command").choices["normals"]
    assert "echo" in next(a for a in sub._actions if a.dest == "backend").choices
    assert {"--prefix", "--copies-apart"} <= {f for a in sub._actions for f in a.option_strings}
    out = tmp_path / "echo.jsonl"
    rc = main(["normals", "--backend", "echo", "--forget", str(demo_dir / "forget.jsonl"),
               "--k", "3", "--prefix", "No:", "--copies-apart", "2", "--out", str(out)])
    assert rc == 0, capsys.readouterr()
    table = NormalTable.load(out)
    assert len(table) == 20 and {a.source for a in table.answers} == {"echo"}
    assert table.get(0, 2).text.startswith("No:  ") and table.get(0, 2).text.endswith("#2")


def test_the_page_offers_it_with_its_settings_form(echo_backend, ui_env):
    at = open_page("app_pages/normals.py")
    assert "echo: the forget answer after a prefix" in at.selectbox(key="normals.backend").options
    at.selectbox(key="normals.backend").set_value("echo").run()
    assert not at.exception
    assert at.text_input(key="normals.echo.prefix").value == "Not so:"
    box = at.number_input(key="normals.echo.copies_apart")
    assert (box.value, box.min, box.max) == (1, 1, 8)
