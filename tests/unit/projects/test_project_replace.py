"""User data is never lost without a confirmed request: replacing a
project is one step (the old project or the new one, never none, whatever fails between),
a benchmark import writes the project together with its protocol, and resetting the demo
keeps its normal-answer history."""

from __future__ import annotations

import os

import pytest

from sga_core.data import NormalAnswer, NormalTable
from sga_core.projects import create_demo_project, create_project, load_project
from sga_core.projects.benchmarks import import_benchmark
from sga_core.projects.project import Project
from tests.helpers.hostile_corpus import write_folder
from tests.helpers.muse_files import published_files


def _complete(path) -> bool:
    return (path / "project.json").is_file() and (path / "forget.jsonl").is_file()


def test_a_failure_while_replacing_a_project_leaves_a_whole_one(tmp_path, demo_dir,
                                                                monkeypatch):
    ws = tmp_path / "ws"
    old = create_project("p", demo_dir / "forget.jsonl", root=ws)
    old_rows = old.forget()

    real_replace = os.replace

    def failing_replace(src, dst, *a, **kw):  # moving the new folder into place fails
        if os.path.basename(src).startswith(".creating-"):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", failing_replace)
    try:
        create_project("p", demo_dir / "retain.jsonl", root=ws, overwrite=True)
    except OSError:
        pass
    monkeypatch.undo()
    # the old project or the new one, complete: never nothing, never half
    assert _complete(ws / "p"), sorted(p.name for p in ws.iterdir())
    rows = load_project("p", ws).forget()
    assert rows == old_rows or len(rows) == 110
    assert not [p for p in ws.iterdir() if p.name.startswith(".creating-")]


def test_replacing_keeps_the_old_project_until_the_new_one_is_whole(tmp_path, demo_dir,
                                                                    monkeypatch):
    ws = tmp_path / "ws"
    create_project("p", demo_dir / "forget.jsonl", root=ws)
    import shutil

    removed = []
    real_rmtree = shutil.rmtree

    def watching_rmtree(path, *a, **kw):  # what is deleted, while the old one is there
        removed.append((str(path), _complete(ws / "p")))
        return real_rmtree(path, *a, **kw)

    monkeypatch.setattr(shutil, "rmtree", watching_rmtree)
    create_project("p", demo_dir / "retain.jsonl", root=ws, overwrite=True)
    monkeypatch.undo()
    assert len(load_project("p", ws).forget()) == 110
    # the live project folder itself is never deleted before the new one is in place
    assert (str(ws / "p"), True) not in removed, removed


def test_a_benchmark_import_writes_its_protocol_with_the_project(tmp_path, monkeypatch):
    folder = write_folder(tmp_path / "news", published_files())

    def refuse(self, **fields):  # any second write after the project exists fails
        raise OSError("disk full")

    monkeypatch.setattr(Project, "update_meta", refuse)
    ws = tmp_path / "ws"
    try:
        p = import_benchmark("muse-news", folder=folder, root=ws)
    except OSError:
        assert not (ws / "muse-news").exists()  # all or nothing
        return
    meta = p.meta
    assert meta["protocol"] == "muse" and meta["benchmark"] == "muse-news"
    assert meta["import_notes"]


def test_resetting_the_demo_keeps_the_normal_answer_history(tmp_path):
    ws = tmp_path / "ws"
    demo = create_demo_project(root=ws)
    table = NormalTable(k=demo.k, answers=[NormalAnswer(0, 1, "hand-written answer", "manual")])
    demo.save_normals(table, reason="edit")
    demo.save_normals(NormalTable(k=demo.k, answers=[NormalAnswer(0, 1, "second edit", "manual")]),
                      reason="edit")
    before = [v.name for v in demo.history()]
    demo = create_demo_project(root=ws, overwrite=True)
    after = [v.name for v in demo.history()]
    assert set(before) <= set(after)
    assert len(after) == len(before) + 1 and "before-reset" in after[0]
    texts = [a.text for v in demo.history() for a in NormalTable.load(v).answers]
    assert "hand-written answer" in texts and "second edit" in texts
    restored = demo.restore(after[0])  # the table it had before the reset comes back
    assert [a.text for a in restored.answers] == ["second edit"]
    assert demo.meta.get("demo") is True


@pytest.mark.parametrize("overwrite", [False])
def test_a_project_is_never_replaced_without_overwrite(tmp_path, demo_dir, overwrite):
    from sga_core.projects import ProjectError

    ws = tmp_path / "ws"
    create_project("p", demo_dir / "forget.jsonl", root=ws)
    with pytest.raises(ProjectError):
        create_project("p", demo_dir / "retain.jsonl", root=ws, overwrite=overwrite)
    assert len(load_project("p", ws).forget()) == 10
