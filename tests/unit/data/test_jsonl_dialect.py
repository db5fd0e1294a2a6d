"""One JSON Lines dialect (docs/spec.md#34-formats-errors-and-bounds): what the workbench writes, it
reads back identically, and valid JSONL holding a raw U+2028, U+2029 or U+0085 (including the
workbench's own old exports) loads."""

from __future__ import annotations

import json

import pytest

from sga_core.data import DataError, NormalAnswer, NormalTable, load_dataset, write_dataset
from sga_core.fileio import (
    append_jsonl,
    atomic_write_json,
    atomic_write_jsonl,
    dumps_jsonl,
    read_json,
    read_jsonl,
)

LINE_BREAKS = ["\u2028", "\u2029", "\u0085"]
STRINGS = [
    "first line\u2028second",
    "para\u2029graph",
    "next\u0085line",
    "nul \u0000 inside",
    "emoji \U0001F600 \U0001F1EB\U0001F1F7 family \U0001F468\u200d\U0001F469\u200d\U0001F467",
    "RTL \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627 \u202eevil\u202c",
    "controls \x01\x0b\x0c\x1c\x1d\x1e\x1f\x7f\r\n\t",
    "quotes \" \\ / and \\u2028 as text",
    "x" * 200_000,
    "\u2028" * 1000,
    "",
]
LONE_SURROGATES = ["\ud800", "a\udfffb", "\udc00\ud800"]
#: what a data file may hold: a NUL, escaped or raw, is refused by the loaders
TEXTS = [s for s in STRINGS if "\x00" not in s]


def test_written_lines_hold_no_line_separator():
    text = dumps_jsonl([{"text": s} for s in STRINGS + LONE_SURROGATES])
    assert text.count("\n") == len(STRINGS) + len(LONE_SURROGATES)
    assert not any(ch in text for ch in LINE_BREAKS)
    assert len(text.splitlines()) == len(STRINGS) + len(LONE_SURROGATES)
    text.encode("utf-8")  # a lone surrogate is written as its escape, never raw


@pytest.mark.parametrize("writer", ["atomic_write_jsonl", "append_jsonl"])
def test_fileio_round_trip_is_lossless(tmp_path, writer):
    rows = [{"i": i, "text": s, "list": [s, {"k": s}]}
            for i, s in enumerate(STRINGS + LONE_SURROGATES)]
    path = tmp_path / "rows.jsonl"
    if writer == "atomic_write_jsonl":
        atomic_write_jsonl(path, rows)
    else:
        for row in rows:
            append_jsonl(path, row)
    assert read_jsonl(path) == rows


def test_atomic_write_json_round_trip(tmp_path):
    obj = {"strings": STRINGS + LONE_SURROGATES}
    atomic_write_json(tmp_path / "x.json", obj)
    assert read_json(tmp_path / "x.json") == obj


def test_dataset_written_by_the_app_reloads_identically(tmp_path):
    rows = [{"question": f"q{i} {s}", "answer": f"a {s}", "perturbed_answer": [f"p {s}"]}
            for i, s in enumerate(TEXTS)]
    write_dataset(tmp_path / "forget.jsonl", rows)
    assert load_dataset(tmp_path / "forget.jsonl").rows == rows


def test_normal_table_written_by_the_app_reloads_identically(tmp_path):
    table = NormalTable([NormalAnswer(i, 1, s or "-", "manual") for i, s in enumerate(TEXTS)],
                        2)
    table.save(tmp_path / "normals.jsonl")
    assert NormalTable.load(tmp_path / "normals.jsonl", k=2).answers == table.answers
    (tmp_path / "export.jsonl").write_text(dumps_jsonl(table.to_rows()), encoding="utf-8")
    assert NormalTable.load(tmp_path / "export.jsonl").answers == table.answers


def raw_jsonl(rows) -> str:
    """JSONL as older versions of the app wrote it (ensure_ascii=False: U+2028 stays raw)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


# the 4 valid files the hostile testing saw rejected: a .jsonl and a TOFU-style .json dataset,
# a normal-answer export, and a project's own forget.jsonl, each with a raw U+2028
@pytest.mark.parametrize("sep", LINE_BREAKS)
def test_valid_files_with_raw_line_separators_load(tmp_path, sep):
    rows = [{"question": f"first{sep}second", "answer": "a"},
            {"question": "q2", "answer": f"x{sep}y"}]
    for name in ("data.jsonl", "tofu_style.json"):
        path = tmp_path / name
        path.write_text(raw_jsonl(rows), encoding="utf-8")
        assert sep in path.read_text(encoding="utf-8")
        assert load_dataset(path).rows == rows
    normals = [NormalAnswer(0, 1, f"first line{sep}second", "manual").to_dict()]
    export = tmp_path / "demo-normals.jsonl"
    export.write_text(raw_jsonl(normals), encoding="utf-8")
    assert NormalTable.load(export).answers[0].text == f"first line{sep}second"


def test_old_project_with_a_raw_u2028_reloads(tmp_path, demo_dir):
    from sga_core.projects import create_demo_project, load_project

    project = create_demo_project(root=tmp_path)
    forget = project.forget()
    forget[0]["answer"] = "typed\u2028in a cell"
    project.forget_path.write_text(raw_jsonl(forget), encoding="utf-8")
    table = NormalTable([NormalAnswer(i, j, f"n{i}\u2028{j}", "manual")
                         for i in range(len(forget)) for j in (1, 2, 3)], 4)
    project.normals_path.write_text(raw_jsonl(table.to_rows()), encoding="utf-8")
    again = load_project(project.name, tmp_path)
    assert again.forget()[0]["answer"] == "typed\u2028in a cell"
    assert again.normals().texts_for(0) == ["n0\u20281", "n0\u20282", "n0\u20283"]
    again.save_normals(again.normals(), "edit")  # and what it writes now reloads too
    assert "\u2028" not in again.normals_path.read_text(encoding="utf-8")
    assert load_project(project.name, tmp_path).normals().texts_for(0)[0] == "n0\u20281"


@pytest.mark.parametrize("surrogate", LONE_SURROGATES)
def test_lone_surrogate_in_data_is_a_clear_error(tmp_path, surrogate):
    """Decision: a lone surrogate (an escaped "\\ud800" in the JSON) is not text that a
    tokenizer or the browser can take; the loaders refuse it, naming file, row and field
    (fileio itself round-trips it losslessly, above)."""
    path = tmp_path / "s.jsonl"
    path.write_text('{"question": "ok", "answer": "ok"}\n'
                    + json.dumps({"question": "q", "answer": f"a{surrogate}"}) + "\n",
                    encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_dataset(path)
    assert (info.value.file, info.value.row, info.value.field) == ("s.jsonl", 2, "answer")
    assert "surrogate" in info.value.reason
    table = NormalTable([], 2)
    with pytest.raises(DataError, match="surrogate"):
        table.set(0, 1, f"typed {surrogate}")
