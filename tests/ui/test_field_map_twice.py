"""One file field chosen for two workbench fields (e.g. ``prompt`` as both question and
answer) is a mistake the library refuses, naming the file field and both workbench fields,
and the Data page cannot create the project while its mapping says so (it once created it,
silently keeping one of the two)."""

from __future__ import annotations

import pytest

from sga_core.data.errors import DataError
from sga_core.data.mapping import check_map, parse_map
from sga_core.projects import create_project
from tests.helpers.own_data import tofu_files
from tests.helpers.ui import open_page, shown

TWICE = [("prompt", "question"), ("prompt", "answer")]


def test_library_refuses_one_file_field_for_two_workbench_fields(tmp_path):
    files = tofu_files(tmp_path / "files")
    with pytest.raises(DataError) as exc:
        check_map(TWICE)
    msg = str(exc.value)
    assert "'prompt'" in msg and "'question'" in msg and "'answer'" in msg, msg
    assert exc.value.field == "prompt"
    # a field under its own name counts too: question read as question and as answer
    with pytest.raises(DataError, match="'question'.*'answer'"):
        check_map([("question", "question"), ("question", "answer")])
    # the CLI's --map flags: the second one used to replace the first without a word
    with pytest.raises(DataError, match="'prompt'"):
        parse_map(["prompt=question", "prompt=answer"])
    # pairs that do not clash are a mapping like any other
    assert check_map([("prompt", "question"), ("response", "answer")]) == {
        "prompt": "question", "response": "answer"}
    with pytest.raises(DataError) as exc:
        create_project("twice", files["forget"], root=tmp_path / "ws",
                       field_maps={"forget": TWICE})
    assert all(f"'{f}'" in str(exc.value) for f in ("prompt", "question", "answer"))
    assert not (tmp_path / "ws" / "twice").exists()


def test_data_page_cannot_create_a_project_while_a_file_field_is_chosen_twice(ui_env):
    files = tofu_files(ui_env / "files")
    at = open_page("app_pages/data.py")
    at.text_input(key="data.name").set_value("tofu").run()
    at.get("file_uploader")[0].set_value(("forget01.json", files["forget"].read_bytes(),
                                          "application/json")).run()
    at.selectbox(key="data.map.forget.answer").set_value("prompt").run()
    errors = [shown(e.value) for e in at.error]
    assert any("prompt" in e and "one workbench field only" in e for e in errors), errors
    assert at.button(key="data.create").disabled
    assert not (ui_env / "workspace" / "tofu").exists()
    # choosing another field makes the mapping valid again, and Create works
    at.selectbox(key="data.map.forget.answer").set_value("response").run()
    assert not at.button(key="data.create").disabled
    at.button(key="data.create").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert (ui_env / "workspace" / "tofu" / "project.json").exists()
