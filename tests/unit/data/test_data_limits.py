"""Loaders raise nothing but DataError, and bound everything a file can set
(docs/spec.md#34-formats-errors-and-bounds): deep nesting, huge numbers, encodings, CSV quoting,
parquet column types, k and forget_index of normal-answer tables, string and row sizes."""

from __future__ import annotations

import datetime
import decimal
import json
import time
from pathlib import Path

import pytest

from sga_core.data import (
    MAX_K,
    DataError,
    NormalAnswer,
    NormalTable,
    limits,
    load_dataset,
    write_dataset,
)
from sga_core.projects import create_demo_project


def error_of(fn, *args, **kwargs) -> DataError:
    with pytest.raises(DataError) as info:
        fn(*args, **kwargs)
    return info.value


def qa_line(**extra) -> str:
    return json.dumps({"question": "q", "answer": "a", **extra}) + "\n"


def test_max_k_is_sgas_own_bound():
    import dataclasses

    from sga_core.methods.sga import SGAConfig

    field = {f.name: f for f in dataclasses.fields(SGAConfig)}["k"]
    assert field.metadata["max"] == MAX_K == limits.MAX_K


@pytest.mark.parametrize("where", ["top", "field", "jsonl-field"])
def test_deep_nesting_is_a_data_error(tmp_path, where):
    deep = "[" * 5000 + "]" * 5000
    if where == "top":
        path, text, row, field = tmp_path / "deep.json", deep, None, None
    elif where == "field":
        path, text, row, field = tmp_path / "deep.json", f"[{qa_line()[:-2]}, \"x\": {deep}}}]", \
            None, None
    else:
        path, text, row, field = tmp_path / "deep.jsonl", qa_line() + qa_line()[:-2] + \
            f', "x": {deep}}}\n', 2, None
    path.write_text(text, encoding="utf-8")
    err = error_of(load_dataset, path)
    assert (err.file, err.row, err.field) == (path.name, row, field)
    assert "nested" in err.reason


def test_nesting_below_pythons_limit_is_bounded_too(tmp_path):
    path = tmp_path / "n.jsonl"
    path.write_text(qa_line()[:-2] + ', "meta": ' + "[" * 200 + "]" * 200 + "}\n")
    err = error_of(load_dataset, path)
    assert (err.row, err.field) == (1, "meta") and str(limits.MAX_DEPTH) in err.reason


def test_csv_cell_of_50k_brackets(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text('question,answer,perturbed_answer\nq,a,"' + "[" * 50000 + "]" * 50000
                    + '"\n', encoding="utf-8")
    err = error_of(load_dataset, path)
    assert (err.file, err.row, err.field) == ("b.csv", 1, "perturbed_answer")


def test_integer_of_5000_digits(tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_text(qa_line() + '{"question": "q", "answer": "a", "n": ' + "7" * 5000 + "}\n")
    err = error_of(load_dataset, path)
    assert (err.row, "4300 digits") == (2, "4300 digits") and "4300 digits" in err.reason


def test_duplicate_keys_are_named(tmp_path):
    path = tmp_path / "dup.json"
    path.write_text('[{"question": "q", "answer": "a"}, '
                    '{"question": "q", "answer": "a", "answer": "b"}]')
    err = error_of(load_dataset, path)
    assert (err.row, err.field) == (2, "answer") and "twice" in err.reason


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-8-sig"])
def test_text_with_a_byte_order_mark_loads(tmp_path, encoding):
    path = tmp_path / "bom.csv"
    path.write_bytes("question,answer\nCaf\u00e9?,Oui \u05e9\n".encode(encoding))
    assert load_dataset(path).rows == [{"question": "Caf\u00e9?", "answer": "Oui \u05e9"}]


@pytest.mark.parametrize("data", [
    "question,answer\nq,a\n".encode("utf-16-le"),  # UTF-16 without a byte-order mark
    bytes(range(256)) * 8,                         # binary junk
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",        # an image renamed
    "question,answer\nq,a\n".encode("cp1252") + b"\x9d\x81",
])
def test_unknown_encodings_and_binary_junk(tmp_path, data):
    path = tmp_path / "junk.csv"
    path.write_bytes(data)
    err = error_of(load_dataset, path)
    assert err.file == "junk.csv" and ("UTF-8" in err.reason or "NUL" in err.reason)


def test_csv_unterminated_quote_is_reported_as_such(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('question,answer\nq1,a1\n"q2,a2\nq3,a3\n', encoding="utf-8")
    err = error_of(load_dataset, path)
    assert (err.file, err.row) == ("q.csv", 2) and "unterminated quote" in err.reason
    lenient = tmp_path / "lenient.csv"  # what a lenient reader took before still loads
    lenient.write_text('question,answer\n"q1"x,a1\n', encoding="utf-8")
    assert load_dataset(lenient).rows == [{"question": "q1x", "answer": "a1"}]


def test_long_strings_and_rows_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr("sga_core.data.checks.MAX_STRING_CHARS", 1000)
    path = tmp_path / "long.jsonl"
    path.write_text(qa_line() + qa_line(answer="x" * 1001))
    err = error_of(load_dataset, path)
    assert (err.row, err.field) == (2, "answer") and "1,000" in err.reason
    assert "import muse-books`, which cuts long texts into token chunks" in err.reason
    monkeypatch.setattr("sga_core.data.formats.MAX_ROWS", 3)
    path.write_text(qa_line() * 4)
    assert "at most 3" in error_of(load_dataset, path).reason
    csv = tmp_path / "rows.csv"
    csv.write_text("question,answer\n" + "q,a\n" * 4)
    assert "at most 3" in error_of(load_dataset, csv).reason


def test_file_size_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr("sga_core.data.formats.MAX_FILE_BYTES", 100)
    path = tmp_path / "big.jsonl"
    path.write_text(qa_line() * 10)
    assert "at most" in error_of(load_dataset, path).reason


# ------------------------------------------------------------------------------- parquet


def odd_table():
    pa = pytest.importorskip("pyarrow")
    return pa.table({
        "question": ["q1", "q2"], "answer": ["a1", "a2"],
        "ts": pa.array([datetime.datetime(2024, 1, 1, 12), None], pa.timestamp("us")),
        "tz": pa.array([datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)] * 2,
                       pa.timestamp("ns", tz="UTC")),
        "day": pa.array([datetime.date(2024, 5, 1)] * 2, pa.date32()),
        "clock": pa.array([datetime.time(1, 2, 3)] * 2, pa.time64("us")),
        "blob": pa.array([b"\xff\x00", b"text"], pa.binary()),
        "price": pa.array([decimal.Decimal("12.50"), decimal.Decimal("-1")],
                          pa.decimal128(10, 2)),
        "took": pa.array([datetime.timedelta(seconds=90), datetime.timedelta(days=1)],
                         pa.duration("s")),
        "half": pa.array([1.5, None], pa.float16()),
        "nan": pa.array([float("nan"), 2.0]),
        "cat": pa.array(["x", "y"]).dictionary_encode(),
        "nested": pa.array([{"a": [1, 2]}, {"a": []}]),
    })


def test_parquet_with_common_column_types_loads_and_reloads(tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(odd_table(), tmp_path / "odd.parquet")
    rows = load_dataset(tmp_path / "odd.parquet").rows
    assert rows[0] == {"question": "q1", "answer": "a1", "ts": "2024-01-01T12:00:00",
                       "tz": "2024-01-01T00:00:00+00:00", "day": "2024-05-01",
                       "clock": "01:02:03", "blob": "/wA=", "price": "12.50", "took": 90.0,
                       "half": 1.5, "cat": "x", "nested": {"a": [1, 2]}}
    assert rows[1]["blob"] == "text" and rows[1]["nan"] == 2.0 and "ts" not in rows[1]
    write_dataset(tmp_path / "snap.jsonl", rows)  # "not JSON serializable" before
    assert load_dataset(tmp_path / "snap.jsonl").rows == rows


def test_parquet_messages_show_no_server_path(tmp_path):
    pytest.importorskip("pyarrow")
    folder = tmp_path / "tmpabc123-secret"
    folder.mkdir()
    path = folder / "upload.parquet"
    path.write_bytes(b"PAR1 this is not parquet PAR1")
    err = error_of(load_dataset, path)
    assert err.file == "upload.parquet"
    assert str(tmp_path) not in str(err) and "secret" not in str(err)


def test_parquet_duplicate_columns(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.Table.from_arrays([pa.array(["q"]), pa.array(["a"]), pa.array(["b"])],
                                 names=["question", "answer", "answer"])
    pq.write_table(table, tmp_path / "dup.parquet")
    err = error_of(load_dataset, tmp_path / "dup.parquet")
    assert err.field == "answer" and "duplicate" in err.reason


# -------------------------------------------------------------------------- normal answers


def normals_file(tmp_path: Path, *rows: dict, name: str = "n.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def answer(i=0, k=1, **kw):
    return {"forget_index": i, "k": k, "text": "t", "source": "idk", **kw}


@pytest.mark.parametrize("k", [1_000_000_000, 64, "1" + "0" * 5000, 1e300, "inf"])
def test_huge_k_is_refused_before_any_allocation(tmp_path, k):
    path = normals_file(tmp_path, answer(), answer(k=k))
    start = time.perf_counter()
    err = error_of(NormalTable.load, path)
    assert time.perf_counter() - start < 1.0
    assert (err.file, err.row, err.field) == ("n.jsonl", 2, "k")
    assert str(MAX_K) in err.reason


def test_huge_forget_index_is_refused(tmp_path):
    path = normals_file(tmp_path, answer(i=10**12))
    err = error_of(NormalTable.load, path)
    assert (err.row, err.field) == (1, "forget_index")


def test_problems_never_build_a_huge_list():
    table = NormalTable([], MAX_K)
    start = time.perf_counter()
    problems = table.problems(1_000_000)
    assert time.perf_counter() - start < 1.0
    assert len(problems) == 1001 and problems[-1] == "... and 62,999,000 more problems"
    assert not table.is_complete(1_000_000)
    assert table.count_problems(1_000_000) == 63_000_000
    with pytest.raises(DataError, match="maximum"):
        NormalTable([], MAX_K + 1)


def test_infinite_score_is_refused(tmp_path):
    path = normals_file(tmp_path, answer(score="inf"))
    assert error_of(NormalTable.load, path).field == "score"


def test_nan_and_overflowing_numbers_read_as_missing(tmp_path):
    """Python's NaN/Infinity and a float that overflows are null (missing), as in parquet,
    so a dataset written back reloads identically (NaN != NaN would not)."""
    path = tmp_path / "nan.jsonl"
    path.write_text('{"question": "q", "answer": "a", "x": NaN, "y": 1e999, "z": -Infinity, '
                    '"w": [NaN, 2.5]}\n', encoding="utf-8")
    rows = load_dataset(path).rows
    assert rows == [{"question": "q", "answer": "a", "x": None, "y": None, "z": None,
                     "w": [None, 2.5]}]
    write_dataset(tmp_path / "again.jsonl", rows)
    assert load_dataset(tmp_path / "again.jsonl").rows == rows
    normals = normals_file(tmp_path, answer(score=float("nan")), name="n2.jsonl")
    assert NormalTable.load(normals).answers[0].score is None


def test_jsonl_line_ends(tmp_path):
    for end in ("\r\n", "\r", "\n"):
        path = tmp_path / "ends.jsonl"
        path.write_bytes((qa_line()[:-1] + end + qa_line()[:-1] + end).encode())
        assert len(load_dataset(path).rows) == 2


def test_project_import_checks_k_and_forget_index(tmp_path):
    project = create_demo_project(root=tmp_path / "ws")  # 10 forget rows, K = 4
    ok = normals_file(tmp_path, *[answer(i, j) for i in range(10) for j in (1, 2, 3)])
    assert len(project.import_normals(ok, name="mine.jsonl")) == 30
    assert "import-mine-jsonl" in project.history()[0].name
    before = project.normals_path.read_bytes(), project.history()
    for bad, field in ((answer(i=10), "forget_index"), (answer(k=4), "k"),
                       (answer(k=20), "k"), (answer(k=10**9), "k")):
        path = normals_file(tmp_path, answer(), bad, name="bad.jsonl")
        err = error_of(project.import_normals, path)
        assert (err.file, err.row, err.field) == ("bad.jsonl", 2, field)
        assert (project.normals_path.read_bytes(), project.history()) == before
    wide = normals_file(tmp_path, answer(k=5), name="wide.jsonl")
    assert project.import_normals(wide, k=6).k == 6  # the K chosen on the page
    assert project.k == 6 and project.normals().k == 6


def test_created_project_k_is_bounded(tmp_path, demo_dir):
    from sga_core.projects import ProjectError, create_project

    with pytest.raises(ProjectError, match="K"):
        create_project("x", demo_dir / "forget.jsonl", k=MAX_K + 1, root=tmp_path)
    assert not (tmp_path / "x").exists()


def test_set_refuses_oversized_text(monkeypatch):
    monkeypatch.setattr("sga_core.data.checks.MAX_STRING_CHARS", 10)
    table = NormalTable([NormalAnswer(0, 1, "ok", "idk")], 2)
    with pytest.raises(DataError, match="at most 10"):
        table.set(0, 1, "x" * 11)
    assert table.get(0, 1).text == "ok"


@pytest.mark.parametrize("cell", ["", "   "])
def test_empty_perturbed_answer_string_is_absent_and_the_project_reloads(tmp_path, cell):
    """A JSON "perturbed_answer": "" loaded as [""] and the project then failed to reload
    ("item 1 is an empty string"): found by the hostile suite."""
    from sga_core.projects import create_project, load_project

    path = tmp_path / "p.jsonl"
    path.write_text(qa_line(perturbed_answer=cell))
    assert load_dataset(path).rows == [{"question": "q", "answer": "a"}]
    create_project("p", path, root=tmp_path / "ws")
    assert load_project("p", tmp_path / "ws").forget() == [{"question": "q", "answer": "a"}]
