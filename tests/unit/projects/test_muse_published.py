"""MUSE-News from the files its authors publish (lists of strings in raw and privleak, the
older ``retain2`` / ``retain2_qa`` names, no ``retain1``, no ICL examples): imported as they
are with every missing optional part listed at once (what it is for, what the project lacks),
refused together under strict, and cut to a consistent subset of the first N articles."""

from __future__ import annotations

import json

import pytest

from sga_core.cli import main
from sga_core.data.hub import HubError
from sga_core.projects import list_projects
from sga_core.projects.benchmarks import import_benchmark
from tests.helpers.hostile_corpus import write_folder
from tests.helpers.muse_files import forget_articles, published_files


@pytest.fixture
def published(tmp_path):
    return write_folder(tmp_path / "news", published_files())


def test_the_published_files_import_with_every_gap_reported(tmp_path, published):
    p = import_benchmark("muse-news", folder=published, root=tmp_path / "ws")
    assert p.kind == "text" and p.protocol == "muse"
    assert [r["text"] for r in p.forget()] == forget_articles()
    assert len(p.retain()) == 4  # raw/retain2, read under its older name
    assert set(p.eval_sets()) == {"forget_eval", "holdout", "privleak_forget", "forget_qa",
                                  "retain_qa"}
    notes = "\n".join(p.meta["import_notes"])
    assert "raw/retain1 read from raw/retain2 (its name in this release of the " \
           "benchmark)" in notes
    assert "knowmem/retain_qa read from knowmem/retain2_qa (its name in" in notes
    assert "imported without 2 optional parts" in notes
    for line in ("knowmem/forget_qa_icl (few-shot examples for KnowMem forget",
                 "KnowMem forget is asked zero-shot",
                 "knowmem/retain_qa_icl (few-shot examples for KnowMem retain"):
        assert line in notes, notes
    assert p.data_warnings() == []  # the verbmem passages come from the forget articles


def test_strict_refuses_naming_every_missing_part_at_once(tmp_path, published):
    ws = tmp_path / "ws"
    with pytest.raises(HubError) as err:
        import_benchmark("muse-news", folder=published, root=ws, strict=True)
    message = str(err.value)
    assert "knowmem/forget_qa_icl" in message and "knowmem/retain_qa_icl" in message
    assert "missing (strict import)" in message
    assert list_projects(ws) == []


def test_a_missing_required_part_lists_the_optional_gaps_too(tmp_path):
    files = {k: v for k, v in published_files().items() if k != "raw/forget.json"}
    with pytest.raises(HubError) as err:
        import_benchmark("muse-news", folder=write_folder(tmp_path / "n", files),
                         root=tmp_path / "ws")
    message = str(err.value)
    assert "'raw', split 'forget'" in message and "2 optional parts missing" in message


def test_first_n_articles_keeps_the_passages_found_in_them(tmp_path, published):
    # one verbmem passage that is in no article: never kept
    files = published_files()
    verbmem = json.loads(files["verbmem/forget.json"])
    verbmem.append({"prompt": "A passage from another", "gt": " article entirely."})
    files["verbmem/forget.json"] = json.dumps(verbmem)
    folder = write_folder(tmp_path / "news2", files)
    p = import_benchmark("muse-news", "news-3", folder=folder, root=tmp_path / "ws", first=3)
    assert [r["text"] for r in p.forget()] == forget_articles()[:3]
    from sga_core.data import load_dataset

    kept = load_dataset(p.eval_sets()["forget_eval"]).rows
    assert [r["prompt"] for r in kept] == [v["prompt"] for v in verbmem[:3]]
    assert len(load_dataset(p.eval_sets()["privleak_forget"]).rows) == 3
    assert len(load_dataset(p.eval_sets()["forget_qa"]).rows) == 6  # questions: all kept
    notes = "\n".join(p.meta["import_notes"])
    assert "the first 3 forget rows of 6" in notes
    assert "verbmem/forget.json: 3 of 7 passages kept" in notes
    assert "privleak/forget.json: 3 of 6 passages kept" in notes
    assert "knowmem/forget_qa.json: every question kept; questions cannot be matched" in notes
    assert p.meta["first_articles"] == 3


def test_cli_import_prints_the_report_and_takes_first_and_strict(tmp_path, published, capsys):
    rc = main(["import", "muse-news", "--from-folder", str(published), "--workspace",
               str(tmp_path / "ws"), "--first", "2"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "imported without 2 optional parts" in out and "first 2 forget rows" in out
    assert "protocol: muse" in out
    rc = main(["import", "muse-news", "--from-folder", str(published), "--workspace",
               str(tmp_path / "ws2"), "--strict"])
    err = capsys.readouterr().err
    assert rc == 2 and "knowmem/forget_qa_icl" in err and "knowmem/retain_qa_icl" in err


def test_muse_books_reads_the_same_layout(tmp_path, published):
    p = import_benchmark("muse-books", folder=published, root=tmp_path / "ws")
    assert p.name == "muse-books" and p.meta["benchmark"] == "muse-books"
