"""Projects on disk: created whole or not at all, normals versioned and restorable."""

from __future__ import annotations

import json

import pytest

from sga_core.data import DataError, NormalAnswer, NormalTable
from sga_core.projects import (
    ProjectError,
    create_demo_project,
    create_project,
    list_projects,
    load_project,
)


def test_demo_project_roundtrip(tmp_path):
    p = create_demo_project(root=tmp_path)
    assert list_projects(tmp_path) == ["demo"]
    q = load_project("demo", tmp_path)
    assert q.kind == "qa" and len(q.forget()) == 10 and len(q.retain()) == 110
    assert set(q.eval_sets()) == {"real_authors", "world_facts"}
    assert q.normals() is None
    with pytest.raises(ProjectError, match="already exists"):
        create_demo_project(root=tmp_path)
    assert p.meta["n_forget"] == 10


def test_bad_file_creates_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q1", "answer": "a1"}\n{"question": "q2"}\n')
    ws = tmp_path / "ws"
    with pytest.raises(DataError) as err:
        create_project("mine", bad, root=ws)
    assert (err.value.file, err.value.row, err.value.field) == ("bad.jsonl", 2, "answer")
    assert list_projects(ws) == []
    assert not any(ws.iterdir()) if ws.exists() else True


def test_mixed_kinds_rejected(tmp_path, demo_dir):
    with pytest.raises(DataError, match="retain data is text"):
        create_project("mix", demo_dir / "forget.jsonl", demo_dir / "text_retain.jsonl",
                       root=tmp_path)


@pytest.mark.parametrize("name", ["", "Has Space", "../evil", "x" * 65, "-lead"])
def test_bad_names(tmp_path, name, demo_dir):
    with pytest.raises(ProjectError):
        create_project(name, demo_dir / "forget.jsonl", root=tmp_path)


def test_normals_history_and_restore(tmp_path):
    p = create_demo_project(root=tmp_path)
    t1 = NormalTable([NormalAnswer(i, 1, f"first {i}", "idk") for i in range(10)], k=2)
    p.save_normals(t1, "generate idk")
    t2 = NormalTable([NormalAnswer(i, 1, f"second {i}", "manual") for i in range(10)], k=2)
    p.save_normals(t2, "edit row 3")
    assert p.normals().texts_for(0) == ["second 0"]
    versions = p.history()
    assert len(versions) == 2 and "edit-row-3" in versions[0].name
    p.restore(versions[1])
    assert p.normals().texts_for(0) == ["first 0"]
    assert len(p.history()) == 3  # the restore is itself a version
    assert p.k == 2
    with pytest.raises(ProjectError):
        p.restore("nope.jsonl")


def test_review_marks_persist(tmp_path):
    p = create_demo_project(root=tmp_path)
    p.set_reviewed([1, 3])
    p.set_reviewed([3], reviewed=False)
    assert load_project("demo", tmp_path).reviewed() == {1}
    assert json.loads((p.path / "review.json").read_text()) == {"reviewed": [1]}


def test_a_taken_name_says_how_to_replace_it(tmp_path, demo_dir):
    from sga_core.projects import create_project

    create_project("mine", demo_dir / "forget.jsonl", root=tmp_path)
    with pytest.raises(ProjectError) as exc:
        create_project("mine", demo_dir / "forget.jsonl", root=tmp_path)
    assert "'replace a project with the same name'" in str(exc.value)
    assert "project create --replace" in str(exc.value)
