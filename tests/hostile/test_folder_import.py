"""MUSE-News folder import, past what the folder tests cover: a symbolic link that loops
(to itself or through another link) is refused naming the link, not a RuntimeError; shards
numbered without zero padding (``forget-2-of-12``) are read in their numbers' order, not the
names' (2 after 10); and a split with numbered shards plus an unnumbered extra is refused
instead of reading the extra's rows in too. Nothing is written on a refusal, and the CLI
says it in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sga_core.data import DataError, load_dataset
from sga_core.data.hub import HubError
from sga_core.projects import list_projects
from sga_core.projects.benchmarks import import_benchmark
from tests.helpers.hostile_corpus import muse_folder_files, parquet_shards, write_folder

ROOT = Path(__file__).resolve().parents[2]
ROWS = [{"text": f"story {i}"} for i in range(12)]


def folder(tmp_path: Path, extra: dict, drop=("raw/forget.jsonl",)) -> Path:
    files = {k: v for k, v in muse_folder_files().items() if k not in drop}
    root = write_folder(tmp_path / "muse", {**files, **extra})
    return root


def refused(tmp_path: Path, root: Path) -> str:
    ws = tmp_path / "ws"
    with pytest.raises((DataError, HubError)) as info:
        import_benchmark("muse-news", folder=root, root=ws)
    assert list_projects(ws) == [] if ws.exists() else True
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-m", "sga_core", "import", "muse-news",
                          "--from-folder", str(root), "--workspace", str(ws)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-1500:]
    return str(info.value)


@pytest.mark.parametrize("loop", ["self", "pair", "shard"])
def test_a_looping_link_is_refused_naming_it(tmp_path, loop):
    root = folder(tmp_path, {})
    if loop == "self":
        os.symlink("forget.jsonl", root / "raw" / "forget.jsonl")
        name = "raw/forget.jsonl"
    elif loop == "pair":
        os.symlink("a.jsonl", root / "raw" / "forget.jsonl")
        os.symlink("forget.jsonl", root / "raw" / "a.jsonl")
        name = "raw/forget.jsonl"
    else:
        name = "raw/forget-00000-of-00001.parquet"
        os.symlink("forget-00000-of-00001.parquet", root / name)
    message = refused(tmp_path, root)
    assert name in message and "loop" in message, message


def test_unpadded_shards_are_read_in_their_numbers_order(tmp_path):
    shards = parquet_shards(ROWS, 12)
    root = folder(tmp_path, {f"raw/forget-{i}-of-12.parquet": b for i, b in
                             enumerate(shards)})
    project = import_benchmark("muse-news", folder=root, root=tmp_path / "ws")
    rows = load_dataset(project.path / "forget.jsonl").rows
    assert [r["text"] for r in rows] == [r["text"] for r in ROWS]


def test_numbered_shards_with_an_unnumbered_extra_are_refused(tmp_path):
    shards = parquet_shards(ROWS, 2)
    root = folder(tmp_path, {"raw/forget-00000-of-00002.parquet": shards[0],
                             "raw/forget-00001-of-00002.parquet": shards[1],
                             "raw/forget-extra.parquet": shards[0]})
    message = refused(tmp_path, root)
    assert "raw/forget-extra.parquet" in message, message
