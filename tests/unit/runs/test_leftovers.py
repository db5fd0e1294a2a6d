"""Clean-up of leftovers after a kill: old ``.creating-*`` folders and
``.*.tmp`` files go, young ones and everything else stay."""

from __future__ import annotations

import os
import time
from pathlib import Path

from sga_core.projects import create_demo_project, load_project
from sga_core.runs.leftovers import GRACE_S, clean_leftovers

HOUR = 3600.0


def age(path: Path, seconds: float) -> Path:
    """Set the modification time of ``path`` (and all below it) ``seconds`` into the past."""
    t = time.time() - seconds
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            os.utime(os.path.join(folder, name), (t, t), follow_symlinks=False)
    os.utime(path, (t, t), follow_symlinks=False)
    return path


def make(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_old_leftovers_go_young_ones_and_real_files_stay(tmp_path):
    ws, runs = tmp_path / "workspace", tmp_path / "runs"
    project = create_demo_project(root=ws)
    old_creating = ws / ".creating-tofu-4242"
    make(old_creating / "forget.jsonl", "partial")
    age(old_creating, 2 * HOUR)
    young_creating = ws / ".creating-news-777"
    make(young_creating / "forget.jsonl")
    half_young = ws / ".creating-books-778"  # old folder, a file still being written
    make(half_young / "retain.jsonl")
    age(half_young, 2 * HOUR)
    os.utime(half_young / "retain.jsonl")
    old_run = runs / ".creating-sga-r-0-8-99"
    make(old_run / "config.yaml")
    age(old_run, 5 * HOUR)
    stale = [age(make(project.path / ".normals.jsonl.abc123.tmp"), 2 * HOUR),
             age(make(project.path / "normals_history" / ".00001-x.jsonl.q1w2.tmp"), 2 * HOUR),
             age(make(runs / "run-1" / "data" / ".forget.jsonl.tmp"), 2 * HOUR),
             age(make(runs / "run-1" / "eval" / ".summary.json.zz.tmp"), 2 * HOUR)]
    young_tmp = make(project.path / ".review.json.young.tmp")
    keep = [age(make(project.path / "notes.tmp"), 2 * HOUR),          # not hidden
            age(make(ws / ".creating-x"), 2 * HOUR),                  # a file, no pid
            age(make(project.path / ".hidden.tmp.bak"), 2 * HOUR)]
    removed = clean_leftovers(ws, runs, tmp_path / "missing")
    assert sorted(removed) == sorted([old_creating, old_run, *stale])
    assert not any(p.exists() for p in removed)
    for p in (young_creating, half_young, young_tmp, *keep):
        assert p.exists(), p
    again = load_project("demo", ws)
    assert len(again.forget()) == 10 and again.meta["n_retain"] == 110
    assert clean_leftovers(ws, runs) == []


def test_grace_period_is_a_parameter(tmp_path):
    leftover = make(tmp_path / ".creating-p-1" / "f")
    age(leftover.parent, 120)
    assert clean_leftovers(tmp_path) == []  # default: an hour
    assert GRACE_S == HOUR
    assert clean_leftovers(tmp_path, grace_s=60) == [leftover.parent]


def test_symlinks_are_not_followed(tmp_path):
    outside = tmp_path / "outside"
    victim = age(make(outside / ".precious.abc.tmp"), 2 * HOUR)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / ".creating-evil-1").symlink_to(outside, target_is_directory=True)
    (root / ".x.y.tmp").symlink_to(victim)
    age(root, 2 * HOUR)  # the links themselves are old too
    assert clean_leftovers(root) == []
    assert victim.exists()


def test_a_leftover_gone_while_the_cleaner_looks_is_left_alone(tmp_path):
    """Another process removed the folder between the cleaner's listing and its look at the
    folder's age (its owner finished, another app's cleaner took it): the app's start at
    that moment died of FileNotFoundError. It counts as young now: nothing to remove."""
    from sga_core.runs.leftovers import _newest_change

    assert _newest_change(tmp_path / ".creating-gone-1234") == float("inf")
