"""Rows that load fine but would mislead a run or its scores are warned about, naming the
rows: forget rows identical to retain rows, forget rows repeated, and VerbMem rows with
nothing to continue (a one-word text scores 0 with no other sign of why). The Data page and
`project show` say so; clean data says nothing."""

from __future__ import annotations

import json

from sga_core.cli import main
from sga_core.data.row_warnings import row_warnings
from sga_core.projects import create_demo_project, create_project
from tests.helpers.ui import open_page, shown

QA = [{"question": f"Who is author {i}?", "answer": f"Author {i} is a writer."}
      for i in range(8)]


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_duplicated_forget_rows_are_named():
    forget = [*QA[:4], QA[1], {**QA[2], "answer": "  Author 2 is a   writer. "}]
    (warning,) = row_warnings("qa", forget)
    assert warning.startswith("2 forget row(s) repeat an earlier one: row 5 (= row 2), "
                              "6 (= row 3)")


def test_forget_rows_also_in_retain_are_named():
    (warning,) = row_warnings("qa", QA[:3], [QA[5], QA[2], QA[6]])
    assert "1 forget row(s) are identical to retain rows: forget row 3 (= retain row 2)" \
        in warning


def test_verbmem_rows_with_nothing_to_continue_are_named():
    forget = [{"text": "Lucien Marchetti was born in Lyon in 1963, the son of a dyer."},
              {"text": "Lyon"}, {"text": "   Marseille "}]
    (warning,) = row_warnings("text", forget)
    assert "VerbMem set 'forget': row 2, 3 leaves no continuation" in warning
    assert "scores those rows 0" in warning
    sets = {"forget_eval": [{"text": "one"}]}
    (warning,) = row_warnings("text", forget[:1], sets=sets)
    assert "VerbMem set 'forget_eval': row 1 (every row)" in warning


def test_clean_data_and_the_demo_say_nothing(tmp_path):
    assert row_warnings("qa", QA[:4], QA[4:]) == []
    assert row_warnings("text", [{"prompt": "p", "continuation": "c"}]) == []
    assert create_demo_project(root=tmp_path / "ws").data_warnings() == []


def test_project_show_prints_the_warnings(tmp_path, capsys):
    forget, retain = tmp_path / "f.jsonl", tmp_path / "r.jsonl"
    forget.write_bytes(jsonl([*QA[:3], QA[0]]))
    retain.write_bytes(jsonl([QA[6], QA[2]]))
    create_project("dup", forget, retain, root=tmp_path / "ws")
    assert main(["project", "show", "dup", "--workspace", str(tmp_path / "ws")]) == 0
    out = capsys.readouterr().out
    assert "warning: 1 forget row(s) repeat an earlier one: row 4 (= row 1)" in out
    assert "warning: 1 forget row(s) are identical to retain rows: forget row 3 (= retain " \
           "row 2)" in out


def test_data_page_shows_the_warnings(ui_env):
    at = open_page("app_pages/data.py")
    assert not at.warning, [w.value for w in at.warning]  # the demo: nothing to say
    at.text_input(key="data.name").set_value("dup").run()
    ups = at.get("file_uploader")
    ups[0].set_value(("f.jsonl", jsonl([*QA[:3], QA[1]]), "text/plain"))
    ups[1].set_value(("r.jsonl", jsonl([QA[0], QA[7]]), "text/plain"))
    at.run()
    at.button(key="data.create").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    warnings = [shown(w.value) for w in at.warning]
    assert any("row 4 (= row 2)" in w for w in warnings), warnings
    assert any("forget row 1 (= retain row 1)" in w for w in warnings), warnings
