"""Plain text passages: a JSON list of strings (MUSE's raw and privleak files) and a .txt file
of blank-line-separated passages are text datasets whose rows have the field ``text``."""

from __future__ import annotations

import json

import pytest

from sga_core.data import DataError, load_dataset


def test_json_list_of_strings_is_a_text_dataset(tmp_path):
    path = tmp_path / "forget.json"
    path.write_text(json.dumps(["First article. It rained.", "Second article: a vote."]))
    ds = load_dataset(path)
    assert ds.kind == "text"
    assert [r["text"] for r in ds.rows] == ["First article. It rained.",
                                           "Second article: a vote."]


def test_jsonl_of_strings_too(tmp_path):
    path = tmp_path / "holdout.jsonl"
    path.write_text('"one passage"\n"another passage"\n')
    assert [r["text"] for r in load_dataset(path, kind="text").rows] == ["one passage",
                                                                        "another passage"]


def test_a_list_of_strings_is_not_qa(tmp_path):
    path = tmp_path / "forget.json"
    path.write_text(json.dumps(["a passage"]))
    with pytest.raises(DataError) as exc:
        load_dataset(path, kind="qa")
    assert exc.value.file == "forget.json" and exc.value.field == "question"


@pytest.mark.parametrize("items, row, said", [
    (["text", {"text": "x"}], 2, "expected a string (the rows before are text passages), got "
                                 "object"),
    ([{"text": "x"}, "text"], 2, "expected an object (record), got string"),
    (["text", 3], 2, "expected a string"),
])
def test_a_mixed_list_names_the_first_odd_row(tmp_path, items, row, said):
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(items))
    with pytest.raises(DataError) as exc:
        load_dataset(path)
    assert (exc.value.file, exc.value.row) == ("mixed.json", row)
    assert said in exc.value.reason


def test_an_empty_string_is_named(tmp_path):
    path = tmp_path / "forget.json"
    path.write_text(json.dumps(["fine", "  "]))
    with pytest.raises(DataError) as exc:
        load_dataset(path)
    assert (exc.value.row, exc.value.field) == (2, "text")


def test_txt_passages_split_at_blank_lines(tmp_path):
    path = tmp_path / "articles.txt"
    path.write_bytes(b"\xef\xbb\xbfFirst passage,\nstill the first.\n\n\n"
                     b"Second passage.\r\n \r\nThird one.\n")
    ds = load_dataset(path)
    assert ds.kind == "text"
    assert [r["text"] for r in ds.rows] == ["First passage,\nstill the first.",
                                           "Second passage.", "Third one."]


def test_blank_txt_is_refused(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("\n \n\n")
    with pytest.raises(DataError) as exc:
        load_dataset(path)
    assert exc.value.file == "empty.txt" and "empty" in exc.value.reason
