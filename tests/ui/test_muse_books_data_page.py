"""The Data page after a MUSE-Books import, as the new user's trial met it: an N above the
number of chunks is said (N asked, the number there is), the source line says each thing
once, and nothing calls the book's chunks "articles"."""

from __future__ import annotations

import pytest

from sga_core.projects import load_project
from sga_core.projects.benchmarks import import_benchmark
from tests.helpers.hostile_corpus import write_folder
from tests.helpers.muse_files import books_files
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow


def _source_line(at) -> str:
    (line,) = [shown(c.value) for c in at.caption if shown(c.value).startswith("from ")]
    return line


def test_a_books_import_says_n_was_capped_and_names_its_source_once(ui_env, tiny_model_dir):
    books = write_folder(ui_env / "books", books_files(20_000, 15_000))
    p = import_benchmark("muse-books", "hp", folder=books, root=ui_env / "workspace",
                         first=1000, tokenizer=str(tiny_model_dir), chunk_tokens=512)
    n = len(p.forget())
    at = open_page("app_pages/data.py", "hp")
    notes = "\n".join(t.value for t in at.text)
    assert f"N = 1000 forget rows asked for, but the forget data has only {n} rows" in notes
    assert "article" not in notes.lower()
    line = _source_line(at)
    assert line.count(str(books)) == 1, line
    assert "raw/forget.txt (forget), raw/retain2.json (retain)" in line


def test_an_older_projects_same_sources_are_named_once(ui_env):
    """Projects imported before the sources named files: both say "<repo>: raw"."""
    at = open_page("app_pages/data.py", "demo")
    load_project("demo", ui_env / "workspace").update_meta(
        forget_source="muse-bench/MUSE-Books: raw", retain_source="muse-bench/MUSE-Books: raw")
    at.run()
    line = _source_line(at)
    assert line.startswith("from muse-bench/MUSE-Books: raw · created"), line
