"""The copyright import's plain-text book and retain corpus are decoded like the data
loaders' files (UTF-8, or UTF-16/32 with a BOM), a NUL character is refused with its
position, and a prompt of 0 tokens is refused as such, through the real import (its
tokenizer: the tiny test model's)."""

from __future__ import annotations

import codecs

import pytest

from sga_core.cli import main
from sga_core.data import DataError
from sga_core.data.book import book_rows, read_text_file
from sga_core.projects.benchmarks import import_copyright

TEXT = ("It was a bright cold day in April, and the clocks were striking thirteen. "
        "Winston Smith slipped quickly through the glass doors of Victory Mansions. ") * 20


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-8-sig"])
def test_book_with_a_bom_reads_like_the_data_loaders(tmp_path, encoding):
    path = tmp_path / "book.txt"
    path.write_bytes(TEXT.encode(encoding))
    assert read_text_file(path) == TEXT


def test_utf16_be_with_a_bom(tmp_path):
    path = tmp_path / "book.txt"
    path.write_bytes(codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"))
    assert read_text_file(path) == TEXT


def test_nul_byte_is_refused_with_its_position(tmp_path):
    path = tmp_path / "book.txt"
    path.write_bytes(TEXT[:30].encode() + b"\x00" + TEXT[30:].encode())
    with pytest.raises(DataError) as exc:
        read_text_file(path)
    assert exc.value.file == "book.txt" and "NUL character (character 31)" in str(exc.value)


def test_zero_prompt_tokens_says_at_least_1():
    with pytest.raises(DataError) as exc:
        book_rows(TEXT, None, 512, 0)
    assert "at least 1 token, got 0" in str(exc.value)
    assert "shorter than" not in str(exc.value)


@pytest.mark.parametrize("segment", [0, 1])
def test_a_segment_too_short_names_the_segment_tokens(segment):
    with pytest.raises(DataError) as exc:
        book_rows(TEXT, None, segment, 200)
    assert str(exc.value).startswith("segment tokens:") and f"got {segment}" in str(exc.value)


def test_import_copyright_reads_a_utf16_book(tmp_path, tiny_model_dir):
    book, retain = tmp_path / "book.txt", tmp_path / "retain.txt"
    book.write_bytes(TEXT.encode("utf-16"))
    retain.write_text(TEXT[::-1], encoding="utf-8")
    project = import_copyright("hp", book, retain, model=str(tiny_model_dir),
                               segment_tokens=64, prompt_tokens=16, root=tmp_path / "ws")
    assert project.forget()[0]["prompt"].startswith("It was a bright cold day")


def test_cli_prompt_tokens_0_is_one_clear_line(tmp_path, capsys, tiny_model_dir):
    book = tmp_path / "book.txt"
    book.write_text(TEXT)
    code = main(["import", "copyright", "--book", str(book), "--retain", str(book), "--name",
                 "hp", "--model", str(tiny_model_dir), "--prompt-tokens", "0",
                 "--workspace", str(tmp_path / "ws")])
    assert code == 2
    err = capsys.readouterr().err
    assert "at least 1 token, got 0" in err and "Traceback" not in err
    assert not (tmp_path / "ws" / "hp").exists()
