"""The documentation: the generated reference pages equal what the code generates now, the
site builds with mkdocs --strict (a broken link, a missing anchor or a page left out of the
navigation fails), and the README stays a front page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sga_core.fileio import load_yaml
from tools import docs_reference

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_generated_reference_pages_are_up_to_date():
    assert docs_reference.main(["--check"]) == 0, "run `python -m tools.docs_reference`"


def test_the_check_names_a_stale_page(tmp_path, capsys):
    docs_reference.main(["--out", str(tmp_path)])
    page = tmp_path / "methods.md"
    page.write_text(page.read_text() + "\nhand edit\n")
    assert docs_reference.main(["--check", "--out", str(tmp_path)]) == 1
    assert "methods.md" in capsys.readouterr().err


def test_the_cli_reference_lists_every_command():
    from sga_core.cli import build_parser

    text = (DOCS / "reference" / "cli.md").read_text()
    commands = next(a for a in build_parser([])._actions if a.dest == "command").choices
    assert commands and all(f"## `{c}`" in text for c in commands)


def _nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [p for v in node.values() for p in _nav_pages(v)]
    return [p for v in node for p in _nav_pages(v)]


def test_every_docs_page_is_in_the_navigation():
    config = load_yaml((ROOT / "mkdocs.yml").read_text(), "mkdocs.yml")
    nav = set(_nav_pages(config["nav"]))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages - nav == set(), "add these pages to mkdocs.yml's nav"
    assert nav - pages == set()


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "reference" / "cli.html").is_file()


def test_the_readme_is_a_front_page():
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 150
    first_block = re.search(r"```bash\n(.*?)```", text, re.S).group(1).splitlines()
    assert [line.split()[:2] for line in first_block] == [["make", "app"], ["make", "test"]]
    for target in re.findall(r"\]\(((?:docs|bench)/[^)#]+)", text):
        assert (ROOT / target).is_file(), target


def test_the_readme_says_how_to_serve_on_another_port():
    # a new user with 8501 taken found no word of the Makefile's PORT
    text = (ROOT / "README.md").read_text()
    assert re.search(r"`make app PORT=\d+`", text)
    assert re.search(r"^PORT\s*\?=", (ROOT / "Makefile").read_text(), re.M)
    assert "--server.port $(PORT)" in (ROOT / "Makefile").read_text()
