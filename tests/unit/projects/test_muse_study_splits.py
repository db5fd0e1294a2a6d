"""MUSE's scalability and sustainability splits (configs ``scal`` / ``sust``, splits
forget_1..4, rows {text}): imported with ``study_splits`` from the authors' JSON files, the
hub's parquet layout or ``datasets`` (the hub or its cache), kept as the project's forget
parts in request order; a benchmark without them (MUSE-Books) imports with each listed."""

from __future__ import annotations

import json

import pytest

from sga_core.cli import main
from sga_core.data import hub
from sga_core.data.hub import HubError
from sga_core.projects import load_project
from sga_core.projects.benchmarks import import_benchmark, import_with
from tests.helpers.hostile_corpus import write_folder
from tests.helpers.muse_files import (
    books_files,
    published_files,
    study_files,
    study_parquet_files,
    sust_fold,
)

PARTS = [f"{c}/forget_{k}" for c in ("scal", "sust") for k in range(1, 5)]


def texts(path) -> list[str]:
    return [json.loads(line)["text"] for line in path.read_text().splitlines()]


def test_the_authors_files_import_as_forget_parts(tmp_path):
    folder = write_folder(tmp_path / "news", {**published_files(), **study_files()})
    p = import_with("muse-news", None, {"from_folder": str(folder), "study_splits": True},
                    root=tmp_path / "ws")
    assert list(p.forget_parts()) == PARTS
    for k in range(1, 5):
        assert texts(p.forget_parts()[f"sust/forget_{k}"]) == sust_fold(k)
        assert texts(p.forget_parts()[f"scal/forget_{k}"]) == \
            [t for j in range(1, k + 1) for t in sust_fold(j)]
    assert list(p.forget_parts("sust")) == PARTS[4:]
    assert p.meta["forget_parts"]["sust/forget_3"] == {
        "source": f"{folder}: sust/forget_3.json", "rows": 6}
    assert not set(p.eval_sets()) & {"forget_1", "sust/forget_1"}  # no evaluation set
    assert not any("scal/" in n or "sust/" in n for n in p.meta["import_notes"])


def test_without_the_setting_nothing_of_them_is_read(tmp_path):
    folder = write_folder(tmp_path / "news", {**published_files(), **study_files()})
    p = import_benchmark("muse-news", folder=folder, root=tmp_path / "ws")
    assert p.forget_parts() == {} and "forget_parts" not in p.meta


def test_the_hubs_parquet_layout_imports_too(tmp_path):
    folder = write_folder(tmp_path / "news", published_files())
    study_parquet_files(folder)
    p = import_benchmark("muse-news", folder=folder, root=tmp_path / "ws", study_splits=True)
    assert texts(p.forget_parts()["sust/forget_2"]) == sust_fold(2)
    assert p.meta["forget_parts"]["scal/forget_4"]["rows"] == 24


def test_through_datasets_the_hub_configs_are_asked_for(tmp_path, monkeypatch):
    asked = []
    files = {**published_files(), **study_files()}

    def fake_hub_rows(repo, config, split):
        asked.append((repo, config, split))
        text = files.get(f"{config}/{split}.json")
        if text is None:
            raise FileNotFoundError(f"{config}/{split}")
        rows = json.loads(text)
        return [{"text": r} if isinstance(r, str) else r for r in rows]

    monkeypatch.setattr(hub, "hub_rows", fake_hub_rows)
    p = import_benchmark("muse-news", root=tmp_path / "ws", study_splits=True)
    assert ("muse-bench/MUSE-News", "sust", "forget_4") in asked
    assert ("muse-bench/MUSE-News", "scal", "forget_1") in asked
    assert texts(p.forget_parts()["sust/forget_4"]) == sust_fold(4)


def test_muse_books_has_none_and_says_so(tmp_path):
    folder = write_folder(tmp_path / "books", books_files(retain_chars=4000,
                                                          holdout_chars=3000))
    p = import_benchmark("muse-books", folder=folder, root=tmp_path / "ws", study_splits=True,
                         chunk_tokens=256)
    assert p.forget_parts() == {}
    notes = "\n".join(p.meta["import_notes"])
    assert "sust/forget_1 (request 1 of MUSE's sustainability study)" in notes
    assert "scal/forget_4" in notes


def test_strict_refuses_a_missing_study_split(tmp_path):
    files = {k: v for k, v in {**published_files(), **study_files()}.items()
             if k != "sust/forget_3.json"}
    with pytest.raises(HubError, match="sust/forget_3"):
        import_benchmark("muse-news", folder=write_folder(tmp_path / "n", files),
                         root=tmp_path / "ws", study_splits=True, strict=True)


def test_a_bad_study_file_is_named_and_nothing_is_written(tmp_path):
    files = {**published_files(), **study_files(), "sust/forget_2.json": '[{"txt": 1}]'}
    ws = tmp_path / "ws"
    with pytest.raises(Exception) as err:
        import_benchmark("muse-news", folder=write_folder(tmp_path / "n", files), root=ws,
                         study_splits=True)
    assert "sust/forget_2.json" in str(err.value)
    assert not (ws / "muse-news").exists()


def test_the_import_command_has_the_flag(tmp_path, capsys):
    folder = write_folder(tmp_path / "news", {**published_files(), **study_files()})
    ws = tmp_path / "ws"
    assert main(["import", "muse-news", "--from-folder", str(folder), "--study-splits",
                 "--workspace", str(ws)]) == 0
    assert list(load_project("muse-news", ws).forget_parts()) == PARTS
