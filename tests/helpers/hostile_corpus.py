"""A corpus of hostile files, generated on demand (nothing binary is
committed): datasets, normal-answer tables and presets that must each end as a clear
DataError / ConfigError or a correct load.

    files = hostile_files(tmp_dir)          # list[Hostile], 200+ files written into tmp_dir
    for f in files:
        f.path, f.target, f.expect          # "dataset" | "normals" | "preset" | "book",
                                            # "load" | "error"
    subset = representative(files)          # one file per (target, group, expect)

``target`` says which loader the file is for: ``dataset`` (``load_dataset``,
``create_project``), ``normals`` (``Project.import_normals`` into a project with 10 forget
rows and K = 4, the demo's shape), ``preset`` (``sga_core.presets.load_preset``) or ``book``
(``sga_core.data.book.read_text_file``, the copyright import's plain-text book). An
expected error may name its ``row`` and ``field``; the message always names the file.
"""

from __future__ import annotations

import codecs
import csv
import datetime
import decimal
import gzip
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NORMALS_FORGET_ROWS = 10  # the project normal-answer files are imported into
NORMALS_K = 4
NOT_CHECKED = "not checked"


@dataclass(frozen=True)
class Hostile:
    path: Path
    target: str  # dataset | normals | preset | book
    expect: str  # load | error
    group: str  # what the file tries (encoding, nesting, csv-quoting, ...)
    row: int | None | str = NOT_CHECKED  # the row an error must name (None: no row)
    field: str | None | str = NOT_CHECKED  # the field an error must name (None: no field)
    names: tuple[str, ...] = ()  # folders: the paths (relative to the folder) an error names

    def __iter__(self):  # unpacks as (path, expectation)
        return iter((self.path, self.expect))


QA = {"question": "Who wrote 'The Silent River'?", "answer": "Basil Al-Kuwaiti wrote it."}
WRONG_TYPES = [3, 2.5, True, None, ["a"], {"a": "b"}, "", "   "]


def _jsonl(rows: list[Any]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _csv(header: list[str], rows: list[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def _deep(n: int) -> str:
    return "[" * n + "]" * n


class _Corpus:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: list[Hostile] = []

    def add(self, name: str, content: str | bytes, target: str, expect: str, group: str,
            row: Any = NOT_CHECKED, field: Any = NOT_CHECKED) -> None:
        folder = self.root / target / f"{len(self.files):03d}"
        folder.mkdir(parents=True)
        path = folder / name
        if isinstance(content, str):
            content = content.encode("utf-8", "surrogatepass")
        path.write_bytes(content)
        self.files.append(Hostile(path, target, expect, group, row, field))

    def dataset(self, name, content, expect, group, row=NOT_CHECKED, field=NOT_CHECKED):
        self.add(name, content, "dataset", expect, group, row, field)

    def normals(self, name, content, expect, group, row=NOT_CHECKED, field=NOT_CHECKED):
        self.add(name, content, "normals", expect, group, row, field)

    def preset(self, name, content, expect, group):
        self.add(name, content, "preset", expect, group)

    def book(self, name, content, expect, group):
        self.add(name, content, "book", expect, group)


# ------------------------------------------------------------------------------- datasets


def _encodings(c: _Corpus) -> None:
    text = _csv(["question", "answer"], [["Caf\u00e9 \u05e9\u05dc\u05d5\u05dd?", "Oui \U0001F600"]])
    for enc in ("utf-8-sig", "utf-16", "utf-16-be", "utf-32", "utf-32-le"):
        data = text.encode(enc)
        if enc in ("utf-16-be", "utf-32-le"):
            bom = codecs.BOM_UTF16_BE if enc == "utf-16-be" else codecs.BOM_UTF32_LE
            data = bom + data
        c.dataset(f"bom-{enc}.csv", data, "load", "encoding")
    c.dataset("bom.jsonl", codecs.BOM_UTF8 + _jsonl([QA]).encode(), "load", "encoding")
    c.dataset("utf16-no-bom.csv", text.encode("utf-16-le"), "error", "encoding", None, None)
    c.dataset("latin1.csv", text.replace("\u05e9\u05dc\u05d5\u05dd", "").replace(
        "\U0001F600", "").encode("latin-1"), "error", "encoding", None, None)
    c.dataset("cp1252.json", '[{"question": "\u201cq\u201d", "answer": "a"}]'.encode("cp1252"),
              "error", "encoding", None, None)
    c.dataset("junk.json", bytes(range(256)) * 16, "error", "encoding", None, None)
    c.dataset("image.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64), "error",
              "encoding", None, None)
    c.dataset("gzipped.jsonl", gzip.compress(_jsonl([QA] * 3).encode()), "error", "encoding",
              None, None)
    c.dataset("zip.parquet", b"PK\x03\x04" + bytes(100), "error", "encoding", None, None)
    c.dataset("nul.jsonl", _jsonl([QA]).encode()[:-2] + b"\x00}\n", "error", "encoding")
    c.dataset("sjis.json", '[{"question": "日本", "answer": "語"}]'.encode("shift_jis"),
              "error", "encoding", None, None)
    c.dataset("truncated-utf8.jsonl", _jsonl([QA]).encode() + "\u00e9".encode()[:1], "error",
              "encoding", None, None)
    c.dataset("overlong-utf8.jsonl", b'{"question": "\xc0\x80", "answer": "a"}\n', "error",
              "encoding", None, None)
    c.dataset("cesu-surrogate.jsonl", b'{"question": "\xed\xa0\x80", "answer": "a"}\n',
              "error", "encoding", None, None)


def _separators(c: _Corpus) -> None:
    for ch, tag in (("\u2028", "u2028"), ("\u2029", "u2029"), ("\u0085", "u0085")):
        rows = [{"question": f"first{ch}second", "answer": "a"},
                {"question": "q2", "answer": f"x{ch}y{ch}"}]
        c.dataset(f"raw-{tag}.jsonl", _jsonl(rows), "load", "separator")
        c.dataset(f"raw-{tag}-tofu.json", _jsonl(rows), "load", "separator")
        c.dataset(f"raw-{tag}.csv", _csv(["question", "answer"], [[r["question"], r["answer"]]
                                                                 for r in rows]), "load",
                  "separator")
    c.dataset("array-u2028.json", json.dumps([{"question": "a\u2028b", "answer": "c"}],
                                             ensure_ascii=False), "load", "separator")
    c.dataset("crlf.jsonl", _jsonl([QA, QA]).replace("\n", "\r\n"), "load", "separator")
    c.dataset("cr-only.jsonl", _jsonl([QA, QA]).replace("\n", "\r"), "load", "separator")
    c.dataset("vt-ff.jsonl", _jsonl([QA]) + "\x0b\x0c\n" + _jsonl([QA]), "load", "separator")
    c.dataset("crlf.csv", _csv(["question", "answer"], [["q", "a"]]).replace("\n", "\r\n"),
              "load", "separator")


def _nesting_and_numbers(c: _Corpus) -> None:
    c.dataset("deep-top.json", _deep(5000), "error", "nesting", None, None)
    c.dataset("deep-top.jsonl", _deep(5000) + "\n", "error", "nesting", 1, None)
    line = json.dumps(QA)[:-1]
    c.dataset("deep-field.jsonl", _jsonl([QA]) + line + f', "meta": {_deep(5000)}}}\n',
              "error", "nesting", 2, None)
    c.dataset("deep-field.json", f"[{line}, \"meta\": {_deep(5000)}}}]", "error", "nesting",
              None, None)
    c.dataset("nested-100.jsonl", line + f', "meta": {_deep(100)}}}\n', "error", "nesting", 1,
              "meta")
    c.dataset("nested-31.jsonl", line + f', "meta": {_deep(31)}}}\n', "load", "nesting")
    c.dataset("nested-objects.jsonl", line + ', "meta": ' + '{"a": ' * 40 + "1" + "}" * 40
              + "}\n", "error", "nesting", 1, "meta")
    c.dataset("bigint-5000.jsonl", line + ', "n": ' + "7" * 5000 + "}\n", "error", "number",
              1, None)
    c.dataset("bigint-5000.json", "[" + line + ', "n": ' + "7" * 5000 + "}]", "error",
              "number", None, None)
    c.dataset("bigint-4000.jsonl", line + ', "n": ' + "7" * 4000 + "}\n", "load", "number")
    c.dataset("nan-inf.jsonl", line + ', "x": NaN, "y": Infinity, "z": 1e999, "w": -0.0}\n',
              "load", "number")
    c.dataset("negative-zero.json", json.dumps([{**QA, "author_id": -0, "f": 1e-320}]),
              "load", "number")


def _structure(c: _Corpus) -> None:
    line = json.dumps(QA)[:-1]
    c.dataset("dup-key.json", f'[{json.dumps(QA)}, {line}, "answer": "again"}}]', "error",
              "structure", 2, "answer")
    c.dataset("dup-key.jsonl", f'{line}, "question": "again"}}\n', "error", "structure", 1,
              "question")
    c.dataset("dup-nested.jsonl", f'{line}, "meta": {{"a": 1, "a": 2}}}}\n', "error",
              "structure", 1, "meta")
    for name, doc in (("string", '"hello"'), ("number", "42"), ("null", "null"),
                      ("bool", "true"), ("empty-array", "[]"), ("empty-object", "{}"),
                      ("array-of-numbers", "[1, 2]"), ("array-with-null", f"[{line}}}, null]"),
                      ("two-lists", json.dumps({"a": [QA], "b": [QA]})),
                      ("trailing-comma", f"[{line}}},]"), ("comment", f"// c\n[{line}}}]"),
                      ("single-quotes", "[{'question': 'q', 'answer': 'a'}]"),
                      ("truncated", f"[{line}"), ("concatenated", f"{line}}}{line}}}")):
        c.dataset(f"{name}.json", doc, "error", "structure")
    c.dataset("wrapped.json", json.dumps({"data": [QA, QA], "version": 2}), "load",
              "structure")
    c.dataset("single-record.json", json.dumps(QA), "load", "structure")
    c.dataset("blank-lines.jsonl", "\n\n" + _jsonl([QA]) + "   \n\t\n" + _jsonl([QA]), "load",
              "structure")
    c.dataset("garbage-line.jsonl", _jsonl([QA, QA]) + "not json\n", "error", "structure", 3,
              None)
    c.dataset("truncated-last.jsonl", _jsonl([QA]) + line, "error", "structure", 2, None)
    c.dataset("array-in-jsonl.jsonl", json.dumps([QA, QA]), "load", "structure")
    c.dataset("object-row.jsonl", _jsonl([QA, [1, 2]]), "error", "structure", 2, None)
    c.dataset("empty-key.jsonl", _jsonl([{**QA, "": "x"}]), "load", "structure")
    c.dataset("extra-fields.jsonl", _jsonl([{**QA, "author_id": 7, "tags": ["x"],
                                             "meta": {"a": [1, {"b": None}]}}]), "load",
              "extra-fields")
    c.dataset("only-extra.jsonl", _jsonl([{"foo": 1, "bar": 2}]), "error", "missing-field", 1,
              None)


def _strings(c: _Corpus) -> None:
    from sga_core.data.limits import MAX_STRING_CHARS

    line = json.dumps(QA)[:-1]
    c.dataset("long-answer.jsonl", _jsonl([QA, {**QA, "answer": "x" * (MAX_STRING_CHARS + 1)}]),
              "error", "size", 2, "answer")
    c.dataset("longest-answer.jsonl", _jsonl([{**QA, "answer": "y" * MAX_STRING_CHARS}]),
              "load", "size")
    c.dataset("long-key.jsonl", _jsonl([{**QA, "k" * (MAX_STRING_CHARS + 1): 1}]), "error",
              "size", 1, NOT_CHECKED)
    c.dataset("long-cell.csv", _csv(["question", "answer"],
                                    [["q", "z" * (MAX_STRING_CHARS + 10)]]), "error", "size", 1,
              None)
    c.dataset("many-rows.jsonl", _jsonl([{"question": f"q{i}", "answer": f"a{i}"}
                                         for i in range(20000)]), "load", "size")
    c.dataset("surrogate.jsonl", line + ', "extra": "\\ud800"}\n', "error", "surrogate", 1,
              "extra")
    c.dataset("surrogate-answer.json", '[{"question": "q", "answer": "a\\udfff"}]', "error",
              "surrogate", 1, "answer")
    c.dataset("surrogate-key.jsonl", line + ', "\\udc00": 1}\n', "error", "surrogate", 1,
              NOT_CHECKED)
    c.dataset("surrogate-pair.jsonl", '{"question": "\\ud83d\\ude00", "answer": "a"}\n', "load",
              "surrogate")
    # an escaped NUL is refused like a raw NUL byte
    c.dataset("escaped-nul.jsonl", '{"question": "q\\u0000q", "answer": "a"}\n', "error",
              "nul", 1, "question")
    c.dataset("unicode-zoo.jsonl", _jsonl([{
        "question": "\u202eevil\u202c \u200b\u200d \U0001F468\u200d\U0001F469\u200d\U0001F467",
        "answer": "\u0645\u0631\u062d\u0628\u0627 \ufeff \ufffd \U0010FFFF \u00e9\u0301"}]),
        "load", "unicode")
    c.dataset("markup.jsonl", _jsonl([{"question": "<script>alert(1)</script> **bold** $x$",
                                       "answer": "![t](http://127.0.0.1:9/track.png)"}]),
              "load", "unicode")


def _wrong_types(c: _Corpus) -> None:
    for field in ("question", "answer"):
        for i, value in enumerate(WRONG_TYPES):
            row = {**QA, field: value}
            if value is None:
                row.pop(field)  # JSON null is missing too
            c.dataset(f"qa-{field}-{i}.jsonl", _jsonl([QA, QA, row]), "error", "wrong-type",
                      3, field)
    for field in ("paraphrased_answer", "paraphrased_question"):
        for i, value in enumerate([3, ["a"], {"a": 1}, True]):
            c.dataset(f"qa-{field}-{i}.json", json.dumps([{**QA, field: value}]), "error",
                      "wrong-type", 1, field)
    for i, value in enumerate([3, {"a": 1}, [1, "b"], ["a", ""], ["a", None], [["a"]], True,
                               "[1, 2]", "[a, b]"]):
        c.dataset(f"qa-perturbed-{i}.jsonl", _jsonl([{**QA, "perturbed_answer": value}]),
                  "error", "wrong-type", 1, "perturbed_answer")
    for i, value in enumerate(["one answer", ["a", "b"], "['a', 'b']", '["a", "b"]', [], None,
                               "", "   ", "[unclosed"]):
        c.dataset(f"qa-perturbed-ok-{i}.jsonl", _jsonl([{**QA, "perturbed_answer": value}]),
                  "load", "wrong-type")
    for i, row in enumerate([{"text": 3}, {"text": ["a"]}, {"text": ""}, {"text": {"a": 1}},
                             {"prompt": 3, "continuation": "c"}, {"prompt": "p", "gt": 5},
                             {"prompt": "p", "continuation": ""}]):
        c.dataset(f"text-wrong-{i}.jsonl", _jsonl([{"text": "ok"}, row]), "error",
                  "wrong-type", 2, NOT_CHECKED)
    c.dataset("text-prompt-only.jsonl", _jsonl([{"text": "ok"}, {"prompt": "p"}]), "error",
              "missing-field", 2, "continuation")
    for i, rows in enumerate([[{"text": "plain"}], [{"prompt": "p", "continuation": "c"}],
                              [{"prompt": "p", "gt": "g"}], [{"prompt": "", "gt": "g"}]]):
        c.dataset(f"text-ok-{i}.jsonl", _jsonl(rows), "load", "text")


def _missing_and_empty(c: _Corpus) -> None:
    rows = [QA, QA, {"question": "q3"}]
    c.dataset("missing-answer.jsonl", _jsonl(rows), "error", "missing-field", 3, "answer")
    c.dataset("missing-answer.json", json.dumps(rows), "error", "missing-field", 3, "answer")
    c.dataset("missing-answer.csv", _csv(["question", "answer"], [["q", "a"], ["q", "a"],
                                                                   ["q3", ""]]),
              "error", "missing-field", 3, "answer")
    c.dataset("missing-question-first.jsonl", _jsonl([{"answer": "a"}, QA]), "error",
              "missing-field", 1, None)
    for name, content in (("empty.json", ""), ("empty.jsonl", ""), ("empty.csv", ""),
                          ("empty.parquet", b""), ("spaces.jsonl", "  \n\t\n"),
                          ("only-bom.json", codecs.BOM_UTF8), ("header-only.csv",
                                                               "question,answer\n"),
                          ("empty-array.jsonl", "[]\n"), ("blank-header.csv", ",,\nq,a,b\n")):
        c.dataset(name, content, "error", "empty", None, None)


def _csv_quoting(c: _Corpus) -> None:
    head = "question,answer,perturbed_answer\n"
    c.dataset("unterminated.csv", head + 'q1,a1,x\n"q2,a2,x\nq3,a3,x\n', "error", "csv-quoting",
              2, None)
    c.dataset("unterminated-header.csv", '"question,answer\nq,a\n', "error", "csv-quoting",
              None, None)
    c.dataset("quote-mid-cell.csv", head + 'q"1,a1,x\n"q2"x,a2,x\n', "load", "csv-quoting")
    c.dataset("multiline-cell.csv", head + '"q\nline2",a,"[""x"", ""y""]"\n', "load",
              "csv-quoting")
    c.dataset("doubled-quotes.csv", head + '"He said ""hi""",a,x\n', "load", "csv-quoting")
    c.dataset("semicolons.csv", "question;answer\nq;a\n", "error", "csv-quoting", 1, None)
    c.dataset("too-many-cells.csv", head + "q,a,x,extra\n", "error", "csv-quoting", 1, None)
    c.dataset("too-few-cells.csv", head + "q,a\n", "load", "csv-quoting")
    c.dataset("dup-header.csv", "question,answer,answer\nq,a,b\n", "error", "csv-quoting", None,
              "answer")
    c.dataset("brackets.csv", head + 'q,a,"' + _deep(25000) + '"\n', "error", "nesting", 1,
              "perturbed_answer")
    c.dataset("open-brackets.csv", head + 'q,a,"' + "[" * 50000 + ']"\n', "error", "nesting",
              1, "perturbed_answer")
    c.dataset("python-list.csv", head + "q,a,\"['x', 'y']\"\n", "load", "csv-quoting")
    c.dataset("list-of-numbers.csv", head + 'q,a,"[1, 2]"\n', "error", "csv-quoting", 1,
              "perturbed_answer")
    c.dataset("surrogate-in-list.csv", head + 'q,a,"[""\\ud800""]"\n', "error", "surrogate", 1,
              "perturbed_answer")
    c.dataset("nul-cell.csv", head + "q\x00,a,x\n", "error", "nul", None, None)
    c.dataset("index-column.csv", ",question,answer\n0,q,a\n1,q2,a2\n", "load", "csv-quoting")
    c.dataset("cr-only.csv", "question,answer\rq,a\rq2,a2\r", "load", "csv-quoting")


def _parquet(c: _Corpus) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover
        return

    def table_bytes(table) -> bytes:
        out = io.BytesIO()
        pq.write_table(table, out)
        return out.getvalue()

    base = {"question": ["q1", "q2", "q3"], "answer": ["a1", "a2", "a3"]}
    odd = {
        "timestamp": pa.array([datetime.datetime(2024, 1, 1, 12)] * 3, pa.timestamp("ms")),
        "timestamp-tz": pa.array([datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)] * 3,
                                 pa.timestamp("ns", tz="Europe/Paris")),
        "date": pa.array([datetime.date(2024, 5, 1)] * 3, pa.date32()),
        "date64": pa.array([datetime.date(2024, 5, 1)] * 3, pa.date64()),
        "time": pa.array([datetime.time(1, 2, 3)] * 3, pa.time32("s")),
        "binary": pa.array([b"\xff\xfe", b"ok", None], pa.binary()),
        "large-binary": pa.array([b"x"] * 3, pa.large_binary()),
        "decimal": pa.array([decimal.Decimal("1.10")] * 3, pa.decimal128(5, 2)),
        "decimal256": pa.array([decimal.Decimal("-3")] * 3, pa.decimal256(40, 0)),
        "duration": pa.array([datetime.timedelta(milliseconds=1500)] * 3, pa.duration("ms")),
        "float16": pa.array([1.5, None, 2.0], pa.float16()),
        "nan": pa.array([float("nan"), float("inf"), 1.0]),
        "dictionary": pa.array(["a", "b", "a"]).dictionary_encode(),
        "struct": pa.array([{"a": 1, "b": "x"}] * 3),
        "list": pa.array([[1, 2], [], None]),
        "map": pa.array([[("k", 1)], [], None], pa.map_(pa.string(), pa.int64())),
        "uint64": pa.array([2**64 - 1] * 3, pa.uint64()),
        "null": pa.array([None] * 3, pa.null()),
        "large-string": pa.array(["s"] * 3, pa.large_string()),
    }
    for name, column in odd.items():
        c.dataset(f"col-{name}.parquet", table_bytes(pa.table({**base, "extra": column})),
                  "load", "parquet-types")
    c.dataset("all-odd.parquet", table_bytes(pa.table({**base, **odd})), "load",
              "parquet-types")
    c.dataset("perturbed-list.parquet", table_bytes(pa.table({
        **base, "perturbed_answer": [["x", "y"], ["z"], []]})), "load", "parquet-types")
    c.dataset("perturbed-ints.parquet", table_bytes(pa.table({
        **base, "perturbed_answer": [[1], [2], [3]]})), "error", "parquet-types", 1,
        "perturbed_answer")
    c.dataset("binary-answer.parquet", table_bytes(pa.table({
        "question": base["question"], "answer": pa.array([b"a1", b"a2", b"a3"])})), "load",
        "parquet-types")
    c.dataset("int-question.parquet", table_bytes(pa.table({
        "question": [1, 2, 3], "answer": base["answer"]})), "error", "wrong-type", 1,
        "question")
    c.dataset("missing-answer.parquet", table_bytes(pa.table({
        "question": base["question"], "answer": ["a1", "a2", None]})), "error",
        "missing-field", 3, "answer")
    c.dataset("zero-rows.parquet", table_bytes(pa.table({"question": pa.array([], pa.string()),
                                                         "answer": pa.array([], pa.string())})),
              "error", "empty", None, None)
    good = table_bytes(pa.table(base))
    c.dataset("truncated.parquet", good[: len(good) // 2], "error", "parquet-broken", None,
              None)
    c.dataset("text.parquet", "not a parquet file", "error", "parquet-broken", None, None)
    c.dataset("footer-only.parquet", b"PAR1" + bytes(8) + b"PAR1", "error", "parquet-broken",
              None, None)
    dup = pa.Table.from_arrays([pa.array(["q"]), pa.array(["a"]), pa.array(["b"])],
                               names=["question", "answer", "answer"])
    c.dataset("dup-columns.parquet", table_bytes(dup), "error", "parquet-broken", None, "answer")


# ------------------------------------------------------------------------- normal answers


def _answer(i: int = 0, k: int = 1, **extra) -> dict:
    return {"forget_index": i, "k": k, "text": f"normal {i}.{k}", "source": "idk", **extra}


def _complete() -> list[dict]:
    return [_answer(i, j) for i in range(NORMALS_FORGET_ROWS) for j in range(1, NORMALS_K)]


def _normals(c: _Corpus) -> None:
    rows = _complete()
    c.normals("complete.jsonl", _jsonl(rows), "load", "normals-ok")
    c.normals("complete.json", json.dumps(rows), "load", "normals-ok")
    c.normals("complete.csv", _csv(list(rows[0]), [[str(v) for v in r.values()] for r in rows]),
              "load", "normals-ok")
    c.normals("partial.jsonl", _jsonl(rows[:5]), "load", "normals-ok")
    c.normals("extra-fields.jsonl", _jsonl([{**r, "model": "x", "n": [1]} for r in rows]),
              "load", "normals-ok")
    c.normals("all-fields.jsonl", _jsonl([_answer(score=0.5, edited=True,
                                                  updated_at="2024-01-01T00:00:00Z")]), "load",
              "normals-ok")
    c.normals("strings.csv", _csv(["forget_index", "k", "text", "source", "score", "edited"],
                                  [["0", "1.0", "t", " Retrieval ", "0.25", "yes"]]), "load",
              "normals-ok")
    for ch, tag in (("\u2028", "u2028"), ("\u2029", "u2029"), ("\u0085", "u0085")):
        c.normals(f"export-{tag}.jsonl", _jsonl([_answer(text=f"first line{ch}second")]),
                  "load", "separator")
    c.normals("nan-score.jsonl", _jsonl([_answer()])[:-2] + ', "score": NaN}\n', "load",
              "normals-ok")
    bad_k = [0, -1, NORMALS_K, 20, 64, 10**9, "1000000000", "1" + "0" * 5000, 1.5, "abc", True,
             None, [1], {"a": 1}, float("inf"), "inf", 1e300]
    for i, k in enumerate(bad_k):
        row = _answer(k=k)
        if k is None:
            row.pop("k")
        c.normals(f"bad-k-{i}.jsonl", _jsonl([_answer(), row]), "error", "normals-k", 2, "k")
    c.normals("huge-k.csv", _csv(["forget_index", "k", "text", "source"],
                                 [["0", "1000000000", "t", "idk"]]), "error", "normals-k", 1,
              "k")
    for i, fi in enumerate([-1, NORMALS_FORGET_ROWS, 10**12, "x", 1.5, None, True, 1e300]):
        row = _answer(i=fi)
        if fi is None:
            row.pop("forget_index")
        c.normals(f"bad-index-{i}.jsonl", _jsonl([_answer(), row]), "error", "normals-index",
                  2, "forget_index")
    for i, source in enumerate(["web", 5, "", None, ["idk"]]):
        row = _answer(source=source)
        if source is None:
            row.pop("source")
        c.normals(f"bad-source-{i}.jsonl", _jsonl([row]), "error", "normals-source", 1,
                  "source")
    c.normals("duplicate.jsonl", _jsonl([_answer(), _answer(1), _answer()]), "error",
              "normals-duplicate", 3, None)
    for i, text in enumerate([5, ["a"], {"a": 1}, True]):
        c.normals(f"bad-text-{i}.jsonl", _jsonl([_answer(text=text)]), "error", "normals-text",
                  1, "text")
    c.normals("surrogate-text.jsonl", '{"forget_index": 0, "k": 1, "text": "\\ud800", '
              '"source": "idk"}\n', "error", "surrogate", 1, "text")
    c.normals("long-text.jsonl", _jsonl([_answer(text="x" * 1_000_001)]), "error", "size", 1,
              "text")
    c.normals("missing-text.jsonl", _jsonl([{k: v for k, v in _answer().items()
                                             if k != "text"}]), "load", "normals-text")
    for i, (field, value) in enumerate([("score", "abc"), ("score", True), ("score", "inf"),
                                        ("score", [1]), ("edited", "maybe"), ("edited", 2),
                                        ("updated_at", 5), ("updated_at", {"a": 1})]):
        c.normals(f"bad-{field}-{i}.jsonl", _jsonl([_answer(**{field: value})]), "error",
                  "normals-types", 1, field)
    c.normals("not-objects.jsonl", "[1, 2, 3]\n", "error", "structure", 1, None)
    c.normals("deep.jsonl", _deep(5000) + "\n", "error", "nesting", 1, None)
    c.normals("junk.csv", bytes(range(256)) * 4, "error", "encoding", None, None)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover
        return
    out = io.BytesIO()
    pq.write_table(pa.table({
        "forget_index": pa.array([0, 1], pa.int8()),
        "k": pa.array([decimal.Decimal("1"), decimal.Decimal("2")], pa.decimal128(3, 0)),
        "text": ["a", "b"], "source": pa.array(["idk", "manual"]).dictionary_encode(),
        "updated_at": pa.array([datetime.datetime(2024, 1, 1)] * 2, pa.timestamp("s")),
        "score": pa.array([0.5, float("nan")])}), out)
    c.normals("typed.parquet", out.getvalue(), "load", "parquet-types")


# ---------------------------------------------------------------------------------- presets


def _presets(c: _Corpus) -> None:
    from sga_core.assets import PRESETS_DIR

    demo = (PRESETS_DIR / "demo-sga.yaml").read_text(encoding="utf-8")
    good = [
        ("demo.yaml", demo), ("empty.yaml", ""), ("comment-only.yaml", "# nothing\n"),
        ("bom.yaml", "\ufeffmethod: sga\n"),
        ("full-config.yaml", "run_id: x\ndata: {forget: f.jsonl}\nsweep: '-1:0:0.5'\n"
                             "method: ga\nmodel: embedded:smollm2\n"),
        ("strings.yaml", "training: {lr: '1e-5', epochs: '2', save_model: 'no'}\n"),
        ("duplicate-key.yaml", "method: ga\nmethod: sga\n"),
        ("nulls.yaml", "training: null\nmethod_args: null\nnotes: null\n"),
        ("npo.yaml", "method: npo\nmethod_args: {beta: 0.2}\n"),
        ("eval.yaml", "eval: {enabled: false, sets: {real_authors: a.jsonl}}\n"),
        ("unicode.yaml", "notes: \"\u2028 \U0001F600 \u202e\"\n"),
    ]
    for name, text in good:
        c.preset(name, text, "load", "preset-ok")
    alias_bomb = "notes: [" + ", ".join(
        ["&a0 [x, x, x, x, x, x, x, x, x, x]"]
        + [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]) + "]\n"
    bad = [
        ("training-int.yaml", "training: 5\n"), ("margs-list-value.yaml",
                                                 "method_args: {r: [1, 2]}\n"),
        ("margs-list.yaml", "method_args: [1, 2]\n"), ("model-map.yaml", "model: {a: 1}\n"),
        ("launch-text.yaml", "launch: x\n"), ("unknown-method.yaml", "method: magic\n"),
        ("syntax.yaml", "method: sga\ntraining: {lr: [1,\n"),
        ("python-object.yaml", "!!python/object:os.system {}\n"),
        ("python-name.yaml", "training: !!python/name:os.system\n"),
        ("python-apply.yaml", "x: !!python/object/apply:os.system [echo hi]\n"),
        ("deep.yaml", "training: " + _deep(5000) + "\n"),
        ("bigint.yaml", "notes: " + "9" * 5000 + "\n"), ("alias-bomb.yaml", alias_bomb),
        ("list.yaml", "- method: sga\n"), ("text.yaml", "just some text\n"),
        ("unknown-key.yaml", "colour: red\n"), ("lr-word.yaml", "training: {lr: fast}\n"),
        ("lr-nan.yaml", "training: {lr: .nan}\n"), ("lr-huge.yaml", "training: {lr: 1e9}\n"),
        ("steps-inf.yaml", "training: {max_steps: .inf}\n"),
        ("steps-negative.yaml", "training: {max_steps: -1}\n"),
        ("batch-zero.yaml", "training: {batch_size: 0}\n"),
        ("probe-rows.yaml", "training: {probe_rows: [" + ", ".join(["1"] * 500) + "]}\n"),
        ("probe-rows-map.yaml", "training: {probe_rows: {a: 1}}\n"),
        ("k-huge.yaml", "method_args: {k: 1000}\n"),
        ("convention.yaml", "method_args: {convention: sideways}\n"),
        ("r-above-1.yaml", "method_args: {r: 2}\n"),
        ("other-method-setting.yaml", "method: ga\nmethod_args: {r: 0.3}\n"),
        ("eval-sets-list.yaml", "eval: {sets: [a]}\n"),
        ("eval-set-name.yaml", "eval: {sets: {'../x': f}}\n"),
        ("notes-list.yaml", "notes: [a]\n"), ("bool-key.yaml", "true: 1\n"),
        ("tabs.yaml", "training:\n\tlr: 1\n"), ("latin1.yaml", "notes: caf\u00e9\n".encode(
            "latin-1")), ("binary.yaml", bytes(range(256))),
        ("cpu-list.yaml", "launch: {cpu: [true]}\n"),
        # a value that contains itself: without end once expanded
        ("self-alias.yaml", "eval:\n  sets: &a [*a]\n"),
        ("self-alias-map.yaml", "notes: &a {x: *a}\n"), ("self-merge.yaml", "&a {<<: *a}\n"),
        # list items read with the single-setting rule
        ("probe-rows-fraction.yaml", "training: {probe_rows: [1.5]}\n"),
        ("probe-rows-bool.yaml", "training: {probe_rows: [true]}\n"),
    ]
    for name, text in bad:
        c.preset(name, text, "error", "preset-bad")


# --- imports: normals and benchmark folders


def _normals_empty(c: _Corpus) -> None:
    """Files holding no answers: importing one would wipe the curated table, so each is
    refused naming the file."""
    for name, content in (("empty.jsonl", ""), ("blank-lines.jsonl", "\n \n\t\n"),
                          ("only-bom.jsonl", codecs.BOM_UTF8), ("empty-list.json", "[]"),
                          ("header-only.csv", "forget_index,k,text,source\n")):
        c.normals(name, content, "error", "normals-empty", None, None)


def muse_folder_files() -> dict[str, str]:
    """A complete MUSE-News folder in the hub's ``<config>/<split>.jsonl`` layout."""
    texts = [{"text": f"News story {i}: the council met on day {i} and voted."}
             for i in range(6)]
    qa = [{"question": f"What happened on day {i}?", "answer": f"A vote on day {i}."}
          for i in range(4)]
    return {"raw/forget.jsonl": _jsonl(texts[:4]), "raw/retain1.jsonl": _jsonl(texts[2:]),
            "verbmem/forget.jsonl": _jsonl([{"prompt": "The council", "gt": " met."}] * 2),
            "privleak/holdout.jsonl": _jsonl(texts[4:]),
            "knowmem/forget_qa.jsonl": _jsonl(qa[2:]), "knowmem/forget_qa_icl.jsonl":
                _jsonl(qa[:2]), "knowmem/retain_qa.jsonl": _jsonl(qa[2:]),
            "knowmem/retain_qa_icl.jsonl": _jsonl(qa[:2])}


def parquet_shards(rows: list[dict], n: int) -> list[bytes]:
    """``rows`` as ``n`` parquet files (the hub's shards of one split), in order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = []
    per = -(-len(rows) // n)
    for i in range(n):
        buf = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(rows[i * per:(i + 1) * per]), buf)
        out.append(buf.getvalue())
    return out


def write_folder(root: Path, files: dict[str, str | bytes | Path]) -> Path:
    """Write a benchmark folder under ``root``; a Path value makes a symbolic link to it."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            path.symlink_to(content)
        else:
            path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def _folders(c: _Corpus) -> None:
    """MUSE-News folders for ``import_benchmark(..., folder=...)``: errors name the path
    relative to the folder, two files for one split are an error naming both, the hub's
    parquet shards are read in order, and links leading outside the folder are refused."""

    def folder(tag: str, files: dict, expect: str, group: str, *names: str,
               drop: tuple[str, ...] = ()) -> None:
        base = c.root / "folder" / f"{len(c.files):03d}"
        kept = {k: v for k, v in {**muse_folder_files(), **files}.items() if k not in drop}
        path = write_folder(base / f"muse-{tag}", kept)
        c.files.append(Hostile(path, "folder", expect, group, names=names))

    folder("ok", {}, "load", "folder-ok")
    folder("empty-raw", {"raw/forget.jsonl": ""}, "error", "folder-names", "raw/forget.jsonl")
    folder("empty-verbmem", {"verbmem/forget.jsonl": ""}, "error", "folder-names",
           "verbmem/forget.jsonl")
    folder("bad-row", {"knowmem/retain_qa.jsonl": _jsonl([QA, {"question": "q"}])}, "error",
           "folder-names", "knowmem/retain_qa.jsonl")
    folder("json-and-jsonl", {"raw/forget.json": _jsonl([{"text": "other"}])}, "error",
           "folder-two-files", "raw/forget.json", "raw/forget.jsonl")
    folder("dash-and-slash", {"knowmem-forget_qa.jsonl": _jsonl([QA])}, "error",
           "folder-two-files", "knowmem/forget_qa.jsonl", "knowmem-forget_qa.jsonl")
    try:
        import pyarrow  # noqa: F401
    except ImportError:  # pragma: no cover
        return
    texts = [{"text": f"Sharded story {i}."} for i in range(5)]
    shards = parquet_shards(texts, 2)
    folder("two-shards", {f"raw/forget-0000{i}-of-00002.parquet": b for i, b in
                          enumerate(shards)}, "load", "folder-shards", drop=("raw/forget.jsonl",))
    folder("three-shards", dict(zip([f"raw/retain1-0000{i}-of-00003.parquet" for i in range(3)],
                                    parquet_shards(texts, 3))), "load", "folder-shards",
           drop=("raw/retain1.jsonl",))
    bad = parquet_shards(texts[:2], 1) + parquet_shards([{"text": "ok"}, {"text": ""}], 1)
    folder("bad-second-shard", {f"raw/forget-0000{i}-of-00002.parquet": b for i, b in
                                enumerate(bad)}, "error", "folder-shards",
           "raw/forget-00001-of-00002.parquet", drop=("raw/forget.jsonl",))
    folder("missing-shard", {"raw/forget-00000-of-00003.parquet": shards[0],
                             "raw/forget-00002-of-00003.parquet": shards[1]}, "error",
           "folder-shards", "raw/forget-00001-of-00003.parquet", drop=("raw/forget.jsonl",))
    folder("shards-and-jsonl", {f"raw/forget-0000{i}-of-00002.parquet": b for i, b in
                                enumerate(shards)}, "error", "folder-two-files",
           "raw/forget.jsonl", "raw/forget-00000-of-00002.parquet")
    many = parquet_shards([{"text": f"Story {i}."} for i in range(12)], 12)
    folder("unpadded-shards", {f"raw/forget-{i}-of-12.parquet": b for i, b in
                               enumerate(many)}, "load", "folder-shards",
           drop=("raw/forget.jsonl",))
    folder("shards-and-stray", {**{f"raw/forget-0000{i}-of-00002.parquet": b for i, b in
                                   enumerate(shards)}, "raw/forget-extra.parquet": shards[0]},
           "error", "folder-shards", "raw/forget-extra.parquet", drop=("raw/forget.jsonl",))


def _folder_links(c: _Corpus) -> None:
    """Symbolic links in a benchmark folder: one staying inside loads, one leading outside
    (a file or a whole config folder) is refused, naming the link."""

    def folder(tag: str, links: dict[str, str], expect: str, *names: str) -> None:
        base = c.root / "folder" / f"{len(c.files):03d}"
        outside = write_folder(base / "outside", {
            "secret.jsonl": _jsonl([{"text": "not yours"}]),
            "knowmem/forget_qa.jsonl": _jsonl([QA]), "knowmem/forget_qa_icl.jsonl": _jsonl([QA]),
            "knowmem/retain_qa.jsonl": _jsonl([QA]), "knowmem/retain_qa_icl.jsonl": _jsonl([QA])})
        files = muse_folder_files()
        root = base / f"muse-{tag}"
        for rel in links:
            files = {k: v for k, v in files.items() if not k.startswith(rel)}
        write_folder(root, files)
        for rel, target in links.items():  # "outside:x" / "inside:x" / a relative link
            where, _, rel_target = target.partition(":")
            dest = {"outside": outside, "inside": root}.get(where)
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).symlink_to(dest / rel_target if dest else Path(target))
        c.files.append(Hostile(root, "folder", expect, "folder-links", names=names))

    folder("link-inside", {"raw/forget.jsonl": "inside:raw/retain1.jsonl"}, "load")
    folder("link-outside", {"raw/forget.jsonl": "outside:secret.jsonl"}, "error",
           "raw/forget.jsonl")
    folder("link-outside-dir", {"knowmem": "outside:knowmem"}, "error", "knowmem")
    folder("link-relative-outside", {"privleak/holdout.jsonl": "../../outside/secret.jsonl"},
           "error", "privleak/holdout.jsonl")


# --- settings, books and field names


def _settings(c: _Corpus) -> None:
    """Presets whose settings each pass a type check but not a sense check, and a 600-byte
    alias bomb under ``eval.sets`` (a billion values once its aliases are expanded)."""
    sets_bomb = "eval:\n  sets:\n    a: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"    b{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 9))
    bad = [
        ("alias-bomb-sets.yaml", sets_bomb),
        ("adaptive-bounds.yaml", "method_args: {adaptive: true, r_min: 1, r_max: -5}\n"),
        ("bounds-reversed.yaml", "method_args: {r_min: 0.5, r_max: 0.2}\n"),
        ("epochs-zero.yaml", "training: {epochs: 0}\n"),
        ("r-just-above-1.yaml", "method_args: {r: 1.0000001}\n"),
    ]
    for name, text in bad:
        c.preset(name, text, "error", "preset-sense")
    good = [
        ("epochs-zero-steps.yaml", "training: {epochs: 0, max_steps: 5}\n"),
        ("bounds-equal.yaml", "method_args: {adaptive: true, r_min: -1, r_max: -1}\n"),
        ("shared-alias.yaml", "eval:\n  sets:\n    a: &f x.jsonl\n    b: *f\n"),
    ]
    for name, text in good:
        c.preset(name, text, "load", "preset-sense-ok")


def _books(c: _Corpus) -> None:
    """Plain-text books for the copyright import: decoded like the data loaders' files."""
    text = "It was a bright cold day in April, and the clocks were striking thirteen.\n" * 5
    for enc in ("utf-8", "utf-8-sig", "utf-16", "utf-32"):
        c.book(f"book-{enc}.txt", text.encode(enc), "load", "book-encoding")
    c.book("book-utf16-be-bom.txt", codecs.BOM_UTF16_BE + text.encode("utf-16-be"), "load",
           "book-encoding")
    c.book("book-nul.txt", text[:40] + "\x00" + text[40:], "error", "book-nul")
    c.book("book-utf16-no-bom.txt", text.encode("utf-16-le"), "error", "book-nul")
    c.book("book-latin1.txt", "caf\u00e9 " * 20, "load", "book-encoding")
    c.book("book-latin1-bytes.txt", ("caf\u00e9 " * 20).encode("latin-1"), "error",
           "book-encoding")
    c.book("book-empty.txt", "", "error", "book-empty")
    c.book("book-blank.txt", " \n\t\n", "error", "book-empty")
    c.book("book-binary.txt", bytes(range(256)) * 4, "error", "book-encoding")


def _field_names(c: _Corpus) -> None:
    """Field names holding terminal escapes, bidi overrides or other invisible controls:
    refused, the message naming the field (escaped) and the file."""
    for tag, name in (("esc", "\x1b[31mquestion"), ("rlo", "answer\u202etxt.exe"),
                      ("lri", "\u2066note"), ("bell", "ding\x07"), ("nl", "two\nlines"),
                      ("del", "x\x7f"), ("lrm", "mark\u200e"), ("c1", "csi\x9b")):
        c.dataset(f"key-{tag}.jsonl", _jsonl([QA, {**QA, name: "v"}]), "error", "field-name",
                  2, name)
        c.dataset(f"key-{tag}.csv", _csv(["question", "answer", name], [["q", "a", "v"]]),
                  "error", "field-name", None, name)
    c.dataset("key-esc-nested.jsonl", _jsonl([{**QA, "meta": {"\x1b]0;x\x07": 1}}]), "error",
              "field-name", 1, "meta")
    c.dataset("key-esc.json", json.dumps([{**QA, "\x1bk": 1}]), "error", "field-name", 1,
              "\x1bk")
    c.dataset("key-rlo-question.jsonl", _jsonl([{"\u202equestion": "q", "answer": "a"}]),
              "error", "field-name", 1, "\u202equestion")
    # letters of any script, emoji and joiners in names are fine
    c.dataset("key-unicode.jsonl", _jsonl([{**QA, "caf\u00e9 \u05e9\u05dc\u05d5\u05dd "
                                                   "\U0001F468\u200d\U0001F469": 1}]), "load",
              "field-name-ok")
    c.dataset("value-esc.jsonl", _jsonl([{**QA, "answer": "\x1b[31mred\u202e"}]), "load",
              "field-name-ok")


def hostile_files(tmp_dir: str | Path) -> list[Hostile]:
    """Write the corpus into ``tmp_dir`` (one sub-folder per file) and describe it."""
    corpus = _Corpus(Path(tmp_dir))
    for part in (_encodings, _separators, _nesting_and_numbers, _structure, _strings,
                 _wrong_types, _missing_and_empty, _csv_quoting, _parquet, _normals, _presets,
                 _normals_empty, _folders, _folder_links, _settings, _books,
                 _field_names):
        part(corpus)
    return corpus.files


def representative(files: list[Hostile]) -> list[Hostile]:
    """One file per (target, group, expect): a small subset for slower paths (AppTest)."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for f in files:
        key = (f.target, f.group, f.expect)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
