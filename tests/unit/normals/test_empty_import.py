"""An empty normal-answer file never replaces the curated table: a 0-byte file, blank lines,
a BOM alone, ``[]`` or a CSV header alone is refused with a message naming the file, and the
table, its history and every file of the project stay as they were."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

import pytest

from sga_core import workbench as wb
from sga_core.data import DataError
from sga_core.normals.idk import idk_normals
from sga_core.projects import create_demo_project

EMPTY_SHAPES = {
    "zero-bytes.jsonl": b"",
    "blank-lines.jsonl": b"\n  \n\t\n",
    "bom-alone.csv": codecs.BOM_UTF8,
    "empty-list.json": b"[]",
    "header-alone.csv": b"forget_index,k,text,source\n",
}


def tree(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            st = Path(folder, name).lstat()
            out[str(Path(folder, name).relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    project = create_demo_project(root=tmp_path_factory.mktemp("ws"))
    project.save_normals(idk_normals(10, 4), "curated")
    return project


@pytest.mark.parametrize("name", sorted(EMPTY_SHAPES))
def test_empty_import_is_refused_and_changes_nothing(project, tmp_path, name):
    path = tmp_path / name
    path.write_bytes(EMPTY_SHAPES[name])
    table, history, files = project.normals(), project.history(), tree(project.path)
    assert len(table) == 30
    with pytest.raises(DataError) as info:
        project.import_normals(path)
    message = str(info.value)
    assert info.value.file == name and message.startswith(name)
    assert "holds no normal answers; the table was left as it was" in message
    assert project.normals().answers == table.answers
    assert project.history() == history
    assert tree(project.path) == files


@pytest.mark.parametrize("name", sorted(EMPTY_SHAPES))
def test_empty_upload_is_refused_naming_the_upload(project, name):
    files = tree(project.path)
    with pytest.raises(DataError, match="holds no normal answers") as info:
        wb.import_normals(project, name, EMPTY_SHAPES[name], k=project.k)
    assert info.value.file == name
    assert tree(project.path) == files


@pytest.mark.parametrize("rows, looks", [
    (b'{"question": "Who?", "answer": "A writer."}\n', "a forget or retain file?"),
    (b'{"text": "A passage of a book."}\n', "a text data file?"),
    (b'{"foo": 1}\n', "its first row has foo"),
])
def test_a_file_of_another_kind_is_said_to_be_one(project, tmp_path, rows, looks):
    """A new user imported a QA forget file as normal answers and read "row 1, field
    'source': missing required field": it is said not to be a normal-answers table, what
    each row needs, and what it looks like; nothing changes."""
    path = tmp_path / "forget.jsonl"
    path.write_bytes(rows)
    table, files = project.normals(), tree(project.path)
    with pytest.raises(DataError) as info:
        project.import_normals(path)
    message = str(info.value)
    assert "is not a normal-answers table: each row needs forget_index, k, text and " \
           "source" in message and looks in message and info.value.row == 1, message
    assert project.normals().answers == table.answers and tree(project.path) == files
