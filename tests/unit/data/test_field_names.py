"""Field names holding terminal escapes (ESC), bidi overrides (U+202E shows 'exe.txt' as
'txt.exe') or other control characters are refused wherever a name comes in: a file's keys
or CSV columns, a field mapping's source. The message names the file and the field, the
field escaped, so printing it can neither colour a terminal nor reorder the text."""

from __future__ import annotations

import json

import pytest

from sga_core.cli import main
from sga_core.data import DataError, load_dataset
from sga_core.data.mapping import check_map
from sga_core.text import printable

RAW = ("\x1b", "\u202e", "\u2066", "\x07", "\x9b", "\n")


def assert_escaped(message: str) -> None:
    assert not any(ch in message for ch in RAW), repr(message)


@pytest.mark.parametrize("name, shown", [("\x1b[31mred", "\\x1b[31mred"),
                                         ("answer\u202etxt.exe", "answer\\u202etxt.exe"),
                                         ("\u2066iso", "\\u2066iso")])
def test_jsonl_key_with_a_control_character_is_refused(tmp_path, name, shown):
    path = tmp_path / "rows.jsonl"
    rows = [{"question": "q", "answer": "a"}, {"question": "q", "answer": "a", name: "v"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError) as exc:
        load_dataset(path)
    assert exc.value.file == "rows.jsonl" and exc.value.row == 2 and exc.value.field == name
    message = str(exc.value)
    assert_escaped(message)
    assert f"field '{shown}'" in message and "rows.jsonl" in message
    assert "control and bidi characters are not allowed in field names" in message


def test_csv_column_with_an_override_is_refused_in_the_header(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("question,answer,\u202enote\nq,a,v\n", encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_dataset(path)
    assert exc.value.row is None and exc.value.field == "\u202enote"
    assert_escaped(str(exc.value))
    assert "U+202E (RIGHT-TO-LEFT OVERRIDE)" in str(exc.value)


def test_nested_key_is_refused_naming_its_top_level_field(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"question": "q", "answer": "a", "meta": {"\x1b]0;t\x07": 1}})
                    + "\n")
    with pytest.raises(DataError) as exc:
        load_dataset(path)
    assert exc.value.field == "meta"
    assert_escaped(str(exc.value))


def test_values_and_letters_of_any_script_stay_allowed(tmp_path):
    path = tmp_path / "rows.jsonl"
    row = {"question": "\x1b[31mq\u202e", "answer": "a", "caf\u00e9 \u05e9\u05dc\u05d5\u05dd": 1}
    path.write_text(json.dumps(row) + "\n")
    assert load_dataset(path).rows[0]["question"] == "\x1b[31mq\u202e"


def test_mapping_source_with_a_control_character_is_refused():
    with pytest.raises(DataError) as exc:
        check_map({"\x1b[2Jprompt": "question"})
    assert_escaped(str(exc.value))
    assert "\\x1b[2Jprompt" in str(exc.value)


def test_project_create_with_such_a_mapping_is_one_escaped_line(tmp_path, capsys, demo_dir):
    code = main(["project", "create", "p", "--forget", str(demo_dir / "forget.jsonl"),
                 "--map", "\x1b[31mq\u202e=question", "--workspace", str(tmp_path / "ws")])
    assert code == 2
    captured = capsys.readouterr()
    assert_escaped(captured.err.rstrip("\n") + captured.out)
    assert "\\x1b[31mq\\u202e" in captured.err
    assert not (tmp_path / "ws" / "p").exists()


def test_printable_escapes_only_what_is_not_printable():
    assert printable("caf\u00e9 \u05e9") == "caf\u00e9 \u05e9"
    assert printable("a\x1bb\u202ec\nd") == "a\\x1bb\\u202ec\\nd"
