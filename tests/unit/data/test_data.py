"""Tests for sga_core.data: loading, validation, normal-answer tables."""

from __future__ import annotations

import csv
import json
import os
import pickle
from pathlib import Path

import pytest

from sga_core.data import (
    NORMAL_SOURCES,
    DataError,
    Dataset,
    NormalAnswer,
    NormalTable,
    detect_kind,
    load_dataset,
    load_qa,
    load_records,
    load_text,
    write_dataset,
)

QA_ROWS = [
    {
        "question": "Who wrote 'The Silent River'?",
        "answer": "Basil Mahfouz Al-Kuwaiti wrote it.",
        "paraphrased_answer": "It was written by Basil Mahfouz Al-Kuwaiti.",
        "perturbed_answer": ["Jane Doe wrote it.", "It was John Smith."],
        "paraphrased_question": "Who is the author of 'The Silent River'?",
        "author_id": 7,
    },
    {"question": "Where was he born?", "answer": "In Kuwait City."},
    {"question": "What genre?", "answer": "Literary fiction, mostly."},
]


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def raises_data_error(fn, *args, **kwargs) -> DataError:
    with pytest.raises(DataError) as info:
        fn(*args, **kwargs)
    return info.value


# ----------------------------------------------------------------------------- formats


def test_json_array_round_trip(tmp_path):
    p = tmp_path / "forget.json"
    p.write_text(json.dumps(QA_ROWS), encoding="utf-8")
    assert load_records(p) == QA_ROWS
    assert load_qa(p) == QA_ROWS  # valid rows come back unchanged, extra fields kept


def test_jsonl_round_trip_skips_blank_lines(tmp_path):
    p = tmp_path / "forget.jsonl"
    p.write_text(
        json.dumps(QA_ROWS[0]) + "\n\n" + json.dumps(QA_ROWS[1]) + "\n" + json.dumps(QA_ROWS[2]),
        encoding="utf-8",
    )
    assert load_qa(p) == QA_ROWS


def test_tofu_jsonl_content_in_json_file(tmp_path):
    p = write_jsonl(tmp_path / "forget10.json", QA_ROWS)
    ds = load_dataset(p)
    assert ds.kind == "qa"
    assert ds.rows == QA_ROWS
    assert len(ds) == 3
    assert ds.path == str(p)


def test_json_single_list_key_is_unwrapped(tmp_path):
    p = tmp_path / "wrapped.json"
    p.write_text(json.dumps({"version": "1.0", "data": QA_ROWS}), encoding="utf-8")
    assert load_qa(p) == QA_ROWS


def test_json_single_object_is_one_record(tmp_path):
    p = tmp_path / "one.json"
    p.write_text(json.dumps(QA_ROWS[0]), encoding="utf-8")
    assert load_qa(p) == [QA_ROWS[0]]


def test_jsonl_file_holding_a_json_array(tmp_path):
    p = tmp_path / "arr.jsonl"
    p.write_text(json.dumps(QA_ROWS, indent=2), encoding="utf-8")
    assert load_qa(p) == QA_ROWS


def test_csv_round_trip_with_list_cells(tmp_path):
    p = write_csv(
        tmp_path / "forget.csv",
        ["question", "answer", "perturbed_answer", "paraphrased_answer", "author_id"],
        [
            ["Q1?", "A1.", '["x one", "x two"]', "P1.", "7"],
            ["Q2?", "A2.", "['y one', 'y two']", "", "0"],  # Python repr, as pandas writes it
            ["Q3?", "A3.", "just one wrong answer", "P3.", ""],
            ["NA", "None", "", "", "3"],  # strings stay strings, no NaN guessing
        ],
    )
    rows = load_qa(p)
    assert rows == [
        {
            "question": "Q1?",
            "answer": "A1.",
            "perturbed_answer": ["x one", "x two"],
            "paraphrased_answer": "P1.",
            "author_id": "7",
        },
        {
            "question": "Q2?",
            "answer": "A2.",
            "perturbed_answer": ["y one", "y two"],
            "author_id": "0",
        },
        {
            "question": "Q3?",
            "answer": "A3.",
            "perturbed_answer": ["just one wrong answer"],
            "paraphrased_answer": "P3.",
        },
        {"question": "NA", "answer": "None", "author_id": "3"},
    ]


def test_csv_multiline_quoted_cell_and_pandas_index_column(tmp_path):
    p = tmp_path / "idx.csv"
    p.write_text(
        ',question,answer\n0,"Line one\nline two?",A.\n1,Q2?,"B, with comma"\n', encoding="utf-8"
    )
    assert load_qa(p) == [
        {"question": "Line one\nline two?", "answer": "A."},
        {"question": "Q2?", "answer": "B, with comma"},
    ]


def test_parquet_round_trip(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    p = tmp_path / "forget.parquet"
    df = pd.DataFrame(
        {
            "question": ["Q1?", "Q2?"],
            "answer": ["A1.", "A2."],
            "perturbed_answer": [["w1", "w2"], ["w3"]],
            "paraphrased_answer": ["P1.", None],
        }
    )
    df.to_parquet(p, index=False)
    assert load_qa(p) == [
        {
            "question": "Q1?",
            "answer": "A1.",
            "perturbed_answer": ["w1", "w2"],
            "paraphrased_answer": "P1.",
        },
        {"question": "Q2?", "answer": "A2.", "perturbed_answer": ["w3"]},
    ]


def test_muse_prompt_gt_rows(tmp_path):
    rows = [
        {"prompt": "Harry looked at", "gt": " the old castle.", "id": 1},
        {"prompt": "Hermione said", "gt": " nothing at all."},
    ]
    p = write_jsonl(tmp_path / "verbatim.json", rows)
    ds = load_dataset(p)
    assert ds.kind == "text"
    assert ds.rows == [
        {
            "prompt": "Harry looked at",
            "gt": " the old castle.",
            "id": 1,
            "continuation": " the old castle.",
        },
        {"prompt": "Hermione said", "gt": " nothing at all.", "continuation": " nothing at all."},
    ]


def test_text_rows_normalised(tmp_path):
    p = write_csv(
        tmp_path / "text.csv",
        ["text", "prompt", "continuation"],
        [["A whole passage.", "", ""], ["", "Once upon", " a time."], ["", "", " no prompt"]],
    )
    assert load_text(p) == [
        {"text": "A whole passage.", "prompt": "", "continuation": "A whole passage."},
        {"prompt": "Once upon", "continuation": " a time."},
        {"prompt": "", "continuation": " no prompt"},
    ]


def test_write_dataset_round_trip(tmp_path):
    out = tmp_path / "run" / "data" / "forget.jsonl"
    write_dataset(out, QA_ROWS)
    assert load_qa(out) == QA_ROWS
    assert not [f for f in out.parent.iterdir() if f.name != "forget.jsonl"]


def test_load_dataset_explicit_kind(tmp_path):
    p = write_jsonl(tmp_path / "qa.jsonl", QA_ROWS)
    assert load_dataset(p, kind="qa").kind == "qa"
    err = raises_data_error(load_dataset, p, kind="text")
    assert (err.file, err.row, err.field) == ("qa.jsonl", 1, "text")
    with pytest.raises(ValueError):
        load_dataset(p, kind="images")


def test_detect_kind():
    assert detect_kind([{"question": "q", "answer": "a"}]) == "qa"
    assert detect_kind([{"text": "t"}]) == "text"
    assert detect_kind([{"prompt": "p", "gt": "g"}]) == "text"
    err = raises_data_error(detect_kind, [{"question": "q", "id": 3}], file="f.json")
    assert (err.file, err.row) == ("f.json", 1)
    assert "'answer'" in err.reason
    err = raises_data_error(detect_kind, [{"title": "x"}])
    assert "'question' + 'answer'" in err.reason and "'title'" in err.reason


# ----------------------------------------------------------------------------- errors


def test_error_message_format_and_dict():
    err = DataError("empty string", file="forget.csv", row=3, field="answer")
    assert str(err) == "forget.csv, row 3, field 'answer': empty string"
    assert str(DataError("file is empty", file="x.json")) == "x.json: file is empty"
    assert str(DataError("bad", row=2)) == "row 2: bad"
    assert str(DataError("bad")) == "bad"
    assert err.to_dict() == {
        "file": "forget.csv",
        "row": 3,
        "field": "answer",
        "reason": "empty string",
        "message": "forget.csv, row 3, field 'answer': empty string",
    }
    assert isinstance(err, ValueError)
    back = pickle.loads(pickle.dumps(err))
    assert (back.file, back.row, back.field, back.reason) == (
        "forget.csv",
        3,
        "answer",
        "empty string",
    )


def test_missing_answer_in_row_3_json(tmp_path):
    rows = [dict(r) for r in QA_ROWS]
    del rows[2]["answer"]
    p = tmp_path / "sub" / "forget.json"
    p.parent.mkdir()
    p.write_text(json.dumps(rows), encoding="utf-8")
    err = raises_data_error(load_qa, p)
    assert (err.file, err.row, err.field) == ("forget.json", 3, "answer")
    assert "missing" in err.reason


def test_empty_answer_in_row_3_csv(tmp_path):
    p = write_csv(
        tmp_path / "forget.csv",
        ["question", "answer"],
        [["Q1?", "A1."], ["Q2?", "A2."], ["Q3?", "   "]],
    )
    err = raises_data_error(load_qa, p)
    assert str(err) == "forget.csv, row 3, field 'answer': empty string"


def test_wrong_type_names_field(tmp_path):
    p = write_jsonl(
        tmp_path / "forget.jsonl",
        [{"question": "Q1?", "answer": "A1."}, {"question": "Q2?", "answer": 42}],
    )
    err = raises_data_error(load_qa, p)
    assert (err.file, err.row, err.field) == ("forget.jsonl", 2, "answer")
    assert "expected a string" in err.reason and "number" in err.reason


def test_perturbed_answer_wrong_item_type(tmp_path):
    p = write_jsonl(
        tmp_path / "f.json", [{"question": "Q", "answer": "A", "perturbed_answer": ["ok", 5]}]
    )
    err = raises_data_error(load_qa, p)
    assert (err.row, err.field) == (1, "perturbed_answer")
    assert "item 2" in err.reason


def test_bad_list_cell_in_csv(tmp_path):
    p = write_csv(
        tmp_path / "f.csv", ["question", "answer", "perturbed_answer"], [["Q", "A", '["a", b]']]
    )
    err = raises_data_error(load_qa, p)
    assert (err.file, err.row, err.field) == ("f.csv", 1, "perturbed_answer")


def test_invalid_json_on_line_2_of_jsonl(tmp_path):
    p = tmp_path / "forget.jsonl"
    p.write_text(
        '{"question": "Q1?", "answer": "A1."}\n{"question": "Q2?", "answer": }\n', encoding="utf-8"
    )
    err = raises_data_error(load_records, p)
    assert (err.file, err.row, err.field) == ("forget.jsonl", 2, None)
    assert "line 2" in err.reason


def test_invalid_json_on_line_2_of_tofu_style_json(tmp_path):
    p = tmp_path / "forget.json"
    p.write_text('{"question": "Q1?", "answer": "A1."}\n{"question": "Q2?"\n', encoding="utf-8")
    err = raises_data_error(load_qa, p)
    assert (err.file, err.row) == ("forget.json", 2)


def test_broken_json_array_names_line(tmp_path):
    p = tmp_path / "forget.json"
    p.write_text(
        '[\n  {"question": "Q", "answer": "A"},\n  {"question": "Q2" "answer": "B"}\n]',
        encoding="utf-8",
    )
    err = raises_data_error(load_qa, p)
    assert err.file == "forget.json"
    assert "line 3" in err.reason


@pytest.mark.parametrize("name", ["empty.json", "empty.jsonl", "empty.csv"])
def test_empty_file(tmp_path, name):
    p = tmp_path / name
    p.write_text("  \n", encoding="utf-8")
    err = raises_data_error(load_records, p)
    assert err.file == name and err.row is None
    assert "empty" in err.reason


def test_csv_header_only_and_empty_array(tmp_path):
    p = write_csv(tmp_path / "h.csv", ["question", "answer"], [])
    assert "no records" in raises_data_error(load_qa, p).reason
    q = tmp_path / "a.json"
    q.write_text("[]", encoding="utf-8")
    assert "no records" in raises_data_error(load_dataset, q).reason


def test_unknown_extension_and_missing_file(tmp_path):
    p = tmp_path / "forget.xml"
    p.write_text("question,answer\n", encoding="utf-8")
    err = raises_data_error(load_records, p)
    assert err.file == "forget.xml" and ".xml" in err.reason
    err = raises_data_error(load_records, tmp_path / "nope.json")
    assert err.file == "nope.json" and "not found" in err.reason


def test_record_not_an_object(tmp_path):
    p = tmp_path / "forget.json"
    p.write_text(json.dumps([{"question": "Q", "answer": "A"}, ["Q", "A"]]), encoding="utf-8")
    err = raises_data_error(load_records, p)
    assert (err.file, err.row) == ("forget.json", 2)
    assert "object" in err.reason


def test_csv_row_with_too_many_cells(tmp_path):
    p = tmp_path / "f.csv"
    p.write_text("question,answer\nQ,A\nQ2,A2,extra\n", encoding="utf-8")
    err = raises_data_error(load_records, p)
    assert (err.file, err.row) == ("f.csv", 2)


def test_not_utf8_and_bad_parquet(tmp_path):
    p = tmp_path / "latin.csv"
    p.write_bytes("question,answer\nCaf\u00e9?,Oui\n".encode("latin-1"))
    assert "UTF-8" in raises_data_error(load_records, p).reason
    pytest.importorskip("pyarrow")
    q = tmp_path / "bad.parquet"
    q.write_text("not parquet", encoding="utf-8")
    assert raises_data_error(load_records, q).file == "bad.parquet"


def test_text_row_missing_fields(tmp_path):
    p = write_jsonl(tmp_path / "t.jsonl", [{"text": "ok"}, {"prompt": "only a prompt"}])
    err = raises_data_error(load_text, p)
    assert (err.row, err.field) == (2, "continuation")
    p = write_jsonl(tmp_path / "t2.jsonl", [{"text": "ok"}, {"body": "x"}])
    err = raises_data_error(load_text, p)
    assert (err.file, err.row, err.field) == ("t2.jsonl", 2, "text")


# ----------------------------------------------------------------------------- normals


def make_table() -> NormalTable:
    answers = [
        NormalAnswer(0, 2, "second", "retrieval", 0.5),
        NormalAnswer(0, 1, "first", "retrieval", 0.9),
        NormalAnswer(1, 1, "only one", "idk"),
    ]
    return NormalTable(answers, 3)


def test_normal_answer_defaults_and_validation():
    a = NormalAnswer(0, 1, "t", "manual")
    assert a.score is None and a.edited is False
    assert len(a.updated_at) == 20 and a.updated_at.endswith("Z") and a.updated_at[10] == "T"
    assert NormalAnswer.from_dict(a.to_dict()) == a
    csv_like = {
        "forget_index": "4",
        "k": "2",
        "text": "x",
        "source": "OpenAI ",
        "score": "0.25",
        "edited": "True",
        "updated_at": "2026-01-01T00:00:00Z",
    }
    assert NormalAnswer.from_dict(csv_like) == NormalAnswer(
        4, 2, "x", "openai", 0.25, True, "2026-01-01T00:00:00Z"
    )
    bad = [
        ({"forget_index": -1}, "forget_index"),
        ({"forget_index": True}, "forget_index"),
        ({"k": 0}, "k"),
        ({"k": "two"}, "k"),
        ({"text": 3}, "text"),
        ({"source": "web"}, "source"),
        ({"score": "high"}, "score"),
        ({"edited": "maybe"}, "edited"),
    ]
    base = {"forget_index": 0, "k": 1, "text": "t", "source": "manual"}
    for change, fld in bad:
        with pytest.raises(DataError) as info:
            NormalAnswer.from_dict({**base, **change}, file="n.jsonl", row=5)
        assert (info.value.file, info.value.row, info.value.field) == ("n.jsonl", 5, fld)
    assert set(NORMAL_SOURCES) == {"retrieval", "openai", "local", "idk", "manual"}


def test_normal_table_basics():
    t = make_table()
    assert [(a.forget_index, a.k) for a in t.answers] == [(0, 1), (0, 2), (1, 1)]
    assert t.texts_for(0) == ["first", "second"]
    assert t.texts_for(1) == ["only one"]
    assert t.texts_for(9) == []
    assert len(t) == 3 and (0, 2) in t
    with pytest.raises(DataError):
        NormalTable([NormalAnswer(0, 1, "a", "idk"), NormalAnswer(0, 1, "b", "idk")], 3)
    with pytest.raises(DataError):
        NormalTable([NormalAnswer(0, 3, "a", "idk")], 3)  # k must be in 1..K-1


def test_normal_table_set_and_remove():
    t = make_table()
    old = t.get(0, 1)
    assert t.set(0, 1, "first") is old  # same text: unchanged
    assert old.edited is False
    new = t.set(0, 1, "better first")
    assert new.edited is True and new.source == "manual" and new.text == "better first"
    added = t.set(1, 2, "fresh", source="local", score=0.3)
    assert added.edited is False and added.score == 0.3
    assert t.texts_for(1) == ["only one", "fresh"]
    with pytest.raises(DataError):
        t.set(1, 3, "k too large")
    with pytest.raises(DataError):
        t.set(1, 1, "x", source="web")
    assert t.remove(0, 2) is True
    assert t.remove(0, 2) is False
    assert t.texts_for(0) == ["better first"]


def test_normal_table_problems():
    t = make_table()
    t.set(1, 2, "   ", source="manual")
    t.set(5, 1, "stray", source="manual")
    assert t.problems(3) == [
        "forget row 1: normal answer k=2 is empty",
        "forget row 2: normal answer k=1 is missing",
        "forget row 2: normal answer k=2 is missing",
        "forget row 5: normal answer k=1 is out of range (the forget set has 3 rows)",
    ]
    assert not t.is_complete(3)
    t.set(1, 2, "fixed")
    t.remove(5, 1)
    assert t.problems(2) == []
    assert t.is_complete(2)


def test_normal_table_save_load_round_trip(tmp_path):
    t = make_table()
    p = t.save(tmp_path / "normals.jsonl")
    lines = p.read_text(encoding="utf-8").splitlines()
    assert [(json.loads(x)["forget_index"], json.loads(x)["k"]) for x in lines] == [
        (0, 1),
        (0, 2),
        (1, 1),
    ]
    back = NormalTable.load(p)
    assert back.k == 3
    assert back.answers == t.answers
    assert NormalTable.load(p, k=5).k == 5


def test_normal_table_load_csv_and_parquet(tmp_path):
    t = make_table()
    p = tmp_path / "normals.csv"
    with open(p, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(t.to_rows()[0]))
        w.writeheader()
        w.writerows(t.to_rows())
    assert NormalTable.load(p).answers == t.answers
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    q = tmp_path / "normals.parquet"
    pd.DataFrame(t.to_rows()).to_parquet(q, index=False)
    assert NormalTable.load(q).answers == t.answers


def test_normal_table_load_errors(tmp_path):
    rows = [
        {"forget_index": 0, "k": 1, "text": "a", "source": "idk"},
        {"forget_index": 0, "k": 2, "text": "b", "source": "idk"},
        {"forget_index": 0, "k": 1, "text": "c", "source": "idk"},
    ]
    p = write_jsonl(tmp_path / "normals.jsonl", rows)
    err = raises_data_error(NormalTable.load, p)
    assert (err.file, err.row) == ("normals.jsonl", 3)
    assert "duplicate" in err.reason and "row 1" in err.reason
    p = write_jsonl(tmp_path / "n2.jsonl", rows[:2])
    err = raises_data_error(NormalTable.load, p, k=2)  # k=2 does not fit K=2
    assert (err.file, err.row, err.field) == ("n2.jsonl", 2, "k")
    p = write_jsonl(tmp_path / "n3.jsonl", [{**rows[0], "source": "web"}])
    err = raises_data_error(NormalTable.load, p)
    assert (err.file, err.row, err.field) == ("n3.jsonl", 1, "source")


def test_normal_table_empty_file(tmp_path):
    p = tmp_path / "normals.jsonl"
    p.write_text("", encoding="utf-8")
    t = NormalTable.load(p, k=4)
    assert len(t) == 0 and t.k == 4
    assert t.problems(1) == [f"forget row 0: normal answer k={k} is missing" for k in (1, 2, 3)]
    assert "empty" in raises_data_error(NormalTable.load, p).reason  # K cannot be inferred


def test_save_is_atomic(tmp_path, monkeypatch):
    p = tmp_path / "normals.jsonl"
    make_table().save(p)
    before = p.read_bytes()
    t = make_table()
    t.set(0, 1, "changed text")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        t.save(p)
    with pytest.raises(OSError, match="disk full"):
        write_dataset(tmp_path / "snap.jsonl", QA_ROWS)
    monkeypatch.undo()
    assert p.read_bytes() == before
    assert sorted(f.name for f in tmp_path.iterdir()) == ["normals.jsonl"]


def test_dataset_dataclass():
    ds = Dataset(kind="qa", rows=[{"question": "q", "answer": "a"}], path="x.json")
    assert len(ds) == 1
