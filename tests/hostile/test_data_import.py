"""Hostile inputs of the data import's newer checks, counted like the rest of the hostile suite:
an escaped NUL in every JSON shape (refused with the same words as a raw NUL byte, naming
file, row and field), a failure while a project is replaced (the old project or the new
one stays, whole), and MUSE's published shapes (long single strings, ``.txt`` raw files).
Never another exception, never a file written on failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sga_core.data import DataError, load_dataset
from sga_core.projects import create_project, list_projects

NUL_FILES = {
    "escaped.jsonl": ('{"question": "q\\u0000", "answer": "a"}\n', 1, "question"),
    "escaped.json": ('[{"question": "q", "answer": "a\\u0000b"}]', 1, "answer"),
    "escaped-list.json": ('["fine text", "bad \\u0000 text"]', 2, "text"),
    "escaped-nested.jsonl": ('{"question": "q", "answer": "a", '
                             '"perturbed_answer": ["x\\u0000"]}\n', 1, "perturbed_answer"),
    "escaped-key.jsonl": ('{"question": "q", "answer": "a", "k\\u0000": 1}\n', 1, None),
    "raw.jsonl": ('{"question": "q\x00", "answer": "a"}\n', None, None),
}


@pytest.mark.parametrize("name", sorted(NUL_FILES))
def test_a_nul_is_refused_escaped_or_raw_with_the_same_words(tmp_path, name):
    text, row, field = NUL_FILES[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_dataset(path)
    message = str(err.value)
    assert "holds a NUL character" in message and name in message
    assert err.value.row == row
    if field is not None:
        assert err.value.field == field
    ws = tmp_path / "ws"
    with pytest.raises(DataError):
        create_project("p", path, root=ws)
    assert list_projects(ws) == [] and not (ws / "p").exists()


@pytest.mark.parametrize("stage", ["move-in", "write"])
def test_a_failure_while_replacing_leaves_a_whole_project(tmp_path, demo_dir, monkeypatch,
                                                          stage):
    ws = tmp_path / "ws"
    create_project("p", demo_dir / "forget.jsonl", root=ws)
    real = os.replace

    def failing(src, dst, *a, **kw):
        name = os.path.basename(src)
        if (stage == "move-in" and name.startswith(".creating-")) or \
                (stage == "write" and name.startswith(".forget.jsonl")):
            raise OSError(5, "I/O error")
        return real(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", failing)
    try:
        create_project("p", demo_dir / "retain.jsonl", root=ws, overwrite=True)
    except OSError:
        pass
    monkeypatch.undo()
    assert (ws / "p" / "project.json").is_file() and (ws / "p" / "forget.jsonl").is_file()
    assert [p.name for p in Path(ws).iterdir() if p.name.startswith(".")] == []
