"""Every published MUSE variant imports, from fixtures of exactly its shape: MUSE-Books'
``raw/forget.txt`` (the book as one text) and its ``raw/retain2.json`` /
``raw/holdout.json``, each ONE string of 1,401,483 / 1,161,885 characters; MUSE-News as JSON
lists and as ``.txt``. Long texts are cut into token chunks as MUSE trains on them, the
limits apply to the chunks, and a subset of N rows keeps the VerbMem passages (all in the
book's last paragraphs) or says plainly what it loses."""

from __future__ import annotations

import re

import pytest

from sga_core.cli import main
from sga_core.data import load_dataset
from sga_core.data.limits import MAX_STRING_CHARS
from sga_core.data.overlap import squeeze
from sga_core.projects.benchmarks import import_benchmark
from tests.helpers.hostile_corpus import write_folder
from tests.helpers.muse_files import (
    BOOK_PARAGRAPHS,
    book_text,
    book_verbmem,
    books_files,
    forget_articles,
    news_txt_files,
    published_files,
)


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    return write_folder(tmp_path_factory.mktemp("books") / "books", books_files())


def _texts(path) -> list[str]:
    return [r["text"] for r in load_dataset(path).rows]


def test_the_published_muse_books_folder_imports(tmp_path, books, tiny_model_dir):
    p = import_benchmark("muse-books", folder=books, root=tmp_path / "ws",
                         tokenizer=str(tiny_model_dir), chunk_tokens=512)
    assert p.kind == "text" and p.protocol == "muse"
    forget = [r["text"] for r in p.forget()]
    assert len(forget) > 3  # the book is cut into chunks, not one row
    assert squeeze(" ".join(forget)) == squeeze(book_text())  # nothing lost or added
    retain = [r["text"] for r in p.retain()]
    holdout = _texts(p.eval_sets()["holdout"])
    assert len(retain) > 100 and len(holdout) > 100
    assert sum(len(t) for t in retain) >= 1_401_483 - len(retain)  # whitespace at the cuts
    assert max(len(t) for t in forget + retain + holdout) < MAX_STRING_CHARS
    notes = "\n".join(p.meta["import_notes"])
    for where in ("raw/forget.txt", "raw/retain2.json", "raw/holdout.json"):
        assert f"{where}: 1 long text" in notes and "chunks of at most 512 tokens" in notes
    assert len(load_dataset(p.eval_sets()["forget_eval"]).rows) == 12
    assert p.data_warnings() == []  # every VerbMem passage lies in the chunks
    assert p.meta["chunk_tokens"] == 512
    # the chunks are longer than a run's default token limit: the notes say what to set
    assert "set it to 512 to train on whole chunks" in notes


def test_a_subset_of_books_keeps_the_verbmem_passages(tmp_path, books, tiny_model_dir):
    p = import_benchmark("muse-books", "hp-4", folder=books, root=tmp_path / "ws", first=4,
                         tokenizer=str(tiny_model_dir), chunk_tokens=512)
    assert len(p.forget()) == 4  # the last paragraphs' chunks, whatever their number
    kept = load_dataset(p.eval_sets()["forget_eval"]).rows
    assert [r["prompt"] for r in kept] == [r["prompt"] for r in book_verbmem()]
    notes = "\n".join(p.meta["import_notes"])
    assert "chosen to hold the VerbMem / PrivLeak forget passages" in notes
    assert "verbmem/forget.json: 12 of 12 passages kept" in notes
    assert p.data_warnings() == []


def test_the_first_n_says_plainly_what_it_loses(tmp_path, books, tiny_model_dir):
    p = import_benchmark("muse-books", "hp-first", folder=books, root=tmp_path / "ws",
                         first=2, subset="first", tokenizer=str(tiny_model_dir),
                         chunk_tokens=512)
    assert "forget_eval" not in p.eval_sets()
    notes = "\n".join(p.meta["import_notes"])
    assert "the first 2 forget rows of" in notes
    assert "verbmem/forget.json left out: none of its 12 passages lies in the kept forget " \
           "rows; keeping all 12 found in the forget rows takes" in notes
    # in the words of the browser's form and of the CLI alike
    assert "takes 4 rows: set N forget rows to 4 with subset of N rows 'evaluated' (the CLI's " \
           "--first 4 --subset evaluated)" in notes


@pytest.mark.parametrize("variant", ["books-json", "news-json", "news-txt"])
def test_every_published_variant_imports(tmp_path, tiny_model_dir, variant):
    files = {"books-json": lambda: books_files(20_000, 15_000, forget_as="json"),
             "news-json": published_files, "news-txt": news_txt_files}[variant]()
    folder = write_folder(tmp_path / variant, files)
    bench = "muse-books" if variant.startswith("books") else "muse-news"
    p = import_benchmark(bench, folder=folder, root=tmp_path / "ws",
                         tokenizer=str(tiny_model_dir), chunk_tokens=256)
    forget = squeeze(" ".join(r["text"] for r in p.forget()))
    if bench == "muse-books":
        assert forget == squeeze(book_text()) and len(p.forget()) > 1
    else:
        assert all(squeeze(a) in forget for a in forget_articles())
    assert p.retain() and "holdout" in p.eval_sets() and "forget_eval" in p.eval_sets()
    assert p.data_warnings() == []


def test_the_cli_imports_the_published_books_folder(tmp_path, books, tiny_model_dir, capsys):
    rc = main(["import", "muse-books", "--from-folder", str(books), "--workspace",
               str(tmp_path / "ws"), "--first", "3", "--tokenizer", str(tiny_model_dir),
               "--chunk-tokens", "512"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "forget rows: 3" in out and "VerbMem" in out


def test_an_n_above_the_rows_is_said_and_a_book_has_no_articles(tmp_path, books,
                                                                  tiny_model_dir, capsys):
    """--first N above the number of chunks keeps them all and says so, naming N and the
    number there is; nothing calls a book's chunks "articles"."""
    rc = main(["import", "muse-books", "--from-folder", str(books), "--workspace",
               str(tmp_path / "ws"), "--first", "1000", "--tokenizer", str(tiny_model_dir),
               "--chunk-tokens", "512", "--subset", "first"])
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    n = int(re.search(r"forget rows: (\d+)", out).group(1))
    assert n < 1000
    assert f"N = 1000 forget rows asked for, but the forget data has only {n} rows: all {n} " \
           "are kept" in out
    assert "article" not in (out + err).lower()


def test_book_paragraph_count_matches_the_fixture():
    assert book_text().count("\n\n") == BOOK_PARAGRAPHS - 1


def test_a_subfolder_or_a_file_given_for_the_folder_says_which_folder_to_give(tmp_path, books):
    """A newcomer pointed the import at MUSE-Books' raw/ subfolder (and at raw/forget.txt):
    the error says which folder holds the part, and that a file is not a folder."""
    from sga_core.data.hub import HubError
    from sga_core.projects import ProjectError

    with pytest.raises((ProjectError, HubError)) as info:
        import_benchmark("muse-books", folder=books / "raw", root=tmp_path / "ws")
    assert f"the folder {books} holds it: did you mean that folder?" in str(info.value)
    # the hint alone: not a list of the 8 optional parts a wrong folder also lacks
    assert "optional part" not in str(info.value) and "\n" not in str(info.value)
    with pytest.raises((ProjectError, HubError)) as info:
        import_benchmark("muse-books", folder=books / "raw" / "forget.txt", root=tmp_path / "ws")
    assert "a file, not a folder" in str(info.value)
    assert not (tmp_path / "ws").exists() or not any((tmp_path / "ws").iterdir())


def test_the_import_says_how_far_each_stage_is(tmp_path, books, tiny_model_dir):
    """The import job's bar follows done of total: each part read, each raw text cut."""
    told = []
    import_benchmark("muse-books", "hp-told", folder=books, root=tmp_path / "ws",
                     tokenizer=str(tiny_model_dir), chunk_tokens=512,
                     progress=lambda *a: told.append(a))
    reading = [(d, t) for stage, d, t in told if stage == "reading the files"]
    assert reading == [(i, 9) for i in range(9)]  # MUSE's nine parts, one at a time
    cutting = [(stage, d, t) for stage, d, t in told if stage.startswith("cutting")]
    assert [(d, t) for _s, d, t in cutting] == [(0, 3), (1, 3), (2, 3)]
    assert "raw/retain2.json" in cutting[1][0]
    assert told[-1] == ("checking and writing the project", 0, 1)


def test_a_cpu_study_keeps_a_few_retain_rows_evenly_spaced(tmp_path, books, tiny_model_dir,
                                                           capsys):
    """A MUSE-Books import kept all 2,170 retain chunks: Prepare's default was 10,870 steps,
    and at the 12 a CPU allowed the Original saw its forget chunks once. --retain-rows N
    keeps N of them, evenly spaced over the whole retain text, and says so; the forget
    rows, the VerbMem passages and the holdout stay as they were."""
    from sga_core.projects import load_project

    whole = import_benchmark("muse-books", "all", folder=books, root=tmp_path / "ws",
                             first=4, tokenizer=str(tiny_model_dir), chunk_tokens=512)
    all_retain = [r["text"] for r in whole.retain()]
    rc = main(["import", "muse-books", "--name", "few", "--from-folder", str(books),
               "--workspace", str(tmp_path / "ws"), "--first", "4", "--retain-rows", "10",
               "--tokenizer", str(tiny_model_dir), "--chunk-tokens", "512"])
    out = capsys.readouterr().out
    assert rc == 0, out
    p = load_project("few", root=tmp_path / "ws")
    kept = [r["text"] for r in p.retain()]
    assert len(kept) == 10 and len(all_retain) > 100
    where = [all_retain.index(t) for t in kept]
    gaps = [b - a for a, b in zip(where, where[1:])]
    # spread evenly over the whole text, not its start
    assert where[0] == 0 and max(gaps) - min(gaps) <= 1 and \
        where[-1] + max(gaps) >= len(all_retain) - 1, where
    assert f"subset: 10 retain rows of {len(all_retain)}, evenly spaced" in out
    assert p.meta["retain_rows"] == 10
    assert [r["text"] for r in p.forget()] == [r["text"] for r in whole.forget()]
    assert _texts(p.eval_sets()["holdout"]) == _texts(whole.eval_sets()["holdout"])
    assert p.data_warnings() == []


def test_a_books_folder_imported_as_news_says_so(tmp_path, books, tiny_model_dir):
    """MUSE-News and MUSE-Books have the same layout: a new user who chose MUSE-News for
    the MUSE-Books folder got a project labelled muse-news without a word. The import
    notes now say the folder is named for the other benchmark (first, so it is read)."""
    p = import_benchmark("muse-news", "slip", folder=books, root=tmp_path / "ws", first=4,
                         tokenizer=str(tiny_model_dir), chunk_tokens=512)
    note = p.meta["import_notes"][0]
    assert "the folder 'books' is named for muse-books, but muse-news was chosen" in note
    right = import_benchmark("muse-books", "right", folder=books, root=tmp_path / "ws",
                             first=4, tokenizer=str(tiny_model_dir), chunk_tokens=512)
    assert not any("is named for" in n for n in right.meta["import_notes"])
