"""A MUSE-News import from a folder (``import_benchmark(..., folder=...)``, the CLI's
``--from-folder``): an error names the file by its path inside the folder (``raw/forget.jsonl``
and ``verbmem/forget.jsonl`` are different files), two files for one split are an error naming
both, the hub's parquet shards of a split are read in order, and a link leading outside the
folder is refused, naming the link; nothing is written on a refusal."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from sga_core.data import DataError
from sga_core.data.hub import HubError
from sga_core.projects import list_projects
from sga_core.projects.benchmarks import import_benchmark
from sga_core.runs.leftovers import temp_prefix
from tests.helpers.hostile_corpus import muse_folder_files, parquet_shards, write_folder


def muse(tmp_path: Path, changes: dict | None = None, drop: tuple[str, ...] = ()) -> Path:
    files = {k: v for k, v in {**muse_folder_files(), **(changes or {})}.items()
             if k not in drop}
    return write_folder(tmp_path / "muse", files)


def refused(tmp_path: Path, folder: Path, error=(DataError, HubError)) -> str:
    ws = tmp_path / "ws"
    with pytest.raises(error) as info:
        import_benchmark("muse-news", folder=folder, root=ws)
    assert list_projects(ws) == [] and not any(p.name.startswith(".") for p in
                                               (ws.iterdir() if ws.exists() else []))
    message = str(info.value)
    assert str(folder) not in message
    return message


@pytest.mark.parametrize("rel", ["raw/forget.jsonl", "verbmem/forget.jsonl"])
def test_an_error_names_the_path_inside_the_folder(tmp_path, rel):
    message = refused(tmp_path, muse(tmp_path, {rel: ""}), DataError)
    assert message.startswith(f"{rel}: ") and "empty" in message


def test_a_row_error_names_the_path_row_and_field(tmp_path):
    bad = "".join(json.dumps(r) + "\n" for r in [{"question": "q", "answer": "a"},
                                                 {"question": "q"}])
    with pytest.raises(DataError) as info:
        import_benchmark("muse-news", folder=muse(tmp_path, {"knowmem/retain_qa.jsonl": bad}),
                         root=tmp_path / "ws")
    assert (info.value.file, info.value.row, info.value.field) == \
        ("knowmem/retain_qa.jsonl", 2, "answer")


@pytest.mark.parametrize("other", ["raw/forget.json", "raw-forget.jsonl", "raw/forget.csv"])
def test_two_files_for_one_split_is_an_error_naming_both(tmp_path, other):
    content = "text\nother\n" if other.endswith(".csv") else '{"text": "other"}\n'
    message = refused(tmp_path, muse(tmp_path, {other: content}), HubError)
    assert "raw/forget.jsonl" in message and other in message


def test_shards_of_a_split_are_read_in_order(tmp_path):
    texts = [{"text": f"Sharded story {i}."} for i in range(7)]
    shards = {f"raw/forget-{i:05d}-of-00003.parquet": b
              for i, b in enumerate(parquet_shards(texts, 3))}
    folder = muse(tmp_path, shards, drop=("raw/forget.jsonl",))
    project = import_benchmark("muse-news", folder=folder, root=tmp_path / "ws")
    assert [r["text"] for r in project.forget()] == [t["text"] for t in texts]
    # this process's own shard folders (sga-shards-<pid>-*): another test session or xdist
    # worker may be importing shards of its own in the same temporary folder right now
    assert not list(Path(tempfile.gettempdir()).glob(f"{temp_prefix('shards')}*/forget.jsonl"))


def test_a_bad_row_in_a_shard_names_the_shard_and_its_row(tmp_path):
    shards = parquet_shards([{"text": "a"}, {"text": "b"}], 1) + \
        parquet_shards([{"text": "c"}, {"text": ""}], 1)
    folder = muse(tmp_path, {f"raw/retain1-{i:05d}-of-00002.parquet": b
                             for i, b in enumerate(shards)}, drop=("raw/retain1.jsonl",))
    with pytest.raises(DataError) as info:
        import_benchmark("muse-news", folder=folder, root=tmp_path / "ws")
    assert (info.value.file, info.value.row) == ("raw/retain1-00001-of-00002.parquet", 2)


def test_a_missing_shard_is_named(tmp_path):
    shards = parquet_shards([{"text": "a"}, {"text": "b"}], 2)
    folder = muse(tmp_path, {"raw/forget-00000-of-00003.parquet": shards[0],
                             "raw/forget-00002-of-00003.parquet": shards[1]},
                  drop=("raw/forget.jsonl",))
    assert "raw/forget-00001-of-00003.parquet" in refused(tmp_path, folder, HubError)


def test_a_link_leading_outside_the_folder_is_refused_naming_it(tmp_path):
    secret = write_folder(tmp_path / "elsewhere", {"secret.jsonl": '{"text": "not yours"}\n'})
    folder = muse(tmp_path, drop=("raw/forget.jsonl",))
    (folder / "raw" / "forget.jsonl").symlink_to(secret / "secret.jsonl")
    message = refused(tmp_path, folder, HubError)
    assert message.startswith("raw/forget.jsonl: ") and "outside" in message


def test_a_linked_config_folder_outside_is_refused_naming_it(tmp_path):
    folder = muse(tmp_path)
    os.rename(folder / "knowmem", tmp_path / "knowmem-elsewhere")
    (folder / "knowmem").symlink_to(tmp_path / "knowmem-elsewhere")
    message = refused(tmp_path, folder, HubError)
    assert message.startswith("knowmem: ") and "outside" in message


def test_a_link_inside_the_folder_loads(tmp_path):
    folder = muse(tmp_path, drop=("privleak/holdout.jsonl",))
    (folder / "privleak").mkdir()
    (folder / "privleak" / "holdout.jsonl").symlink_to("../raw/retain1.jsonl")
    project = import_benchmark("muse-news", folder=folder, root=tmp_path / "ws")
    assert len(project.eval_sets()) == 6


def test_cli_names_the_path_inside_the_folder(tmp_path, capsys):
    from sga_core.cli import main

    folder = muse(tmp_path, {"verbmem/forget.jsonl": ""})
    rc = main(["import", "muse-news", "--from-folder", str(folder), "--workspace",
               str(tmp_path / "ws")])
    err = capsys.readouterr().err
    assert rc != 0 and "verbmem/forget.jsonl" in err and "Traceback" not in err
