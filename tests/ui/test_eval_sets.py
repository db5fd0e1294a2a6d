"""The Data page's add-an-evaluation-set panel: the set name starts from the chosen file's
name (made a valid set name), a name the person typed is kept, the panel stays open after
an add, and the sets table lists the new set at once (no reload)."""

from __future__ import annotations

import pytest

from tests.helpers.own_data import own_project, tofu_files
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow


def add_panel(at):
    return next(e for e in at.expander if e.label == "Add an evaluation set")


def test_add_sets_name_from_the_file_panel_open_table_at_once(ui_env):
    from sga_core.projects import create_demo_project

    create_demo_project(root=ui_env / "workspace")
    files = tofu_files(ui_env / "files")
    own_project(ui_env / "workspace", files)
    at = open_page("app_pages/data.py")
    at.selectbox(key="_project_picker").set_value("mine").run()
    assert add_panel(at).proto.expanded  # no set yet: open
    at.get("file_uploader")[2].set_value(
        ("My Authors (v2).json", files["util"].read_bytes(), "application/json")).run()
    assert at.text_input(key="data.set_name.0").value == "my_authors_v2"
    at.button(key="data.set_add").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Added my_authors_v2" in shown(s.value) for s in at.success)
    assert list(at.dataframe[-1].value["set"]) == ["my_authors_v2"]
    assert add_panel(at).proto.expanded, "the panel folded after the add"
    at.run()  # the confirmation goes away: the panel stays open
    assert add_panel(at).proto.expanded
    # a name typed before choosing the file is the person's: it stays
    at.text_input(key="data.set_name.1").set_value("trivia_mine").run()
    at.get("file_uploader")[2].set_value(
        ("trivia.jsonl", files["plain"].read_bytes(), "text/plain")).run()
    assert at.text_input(key="data.set_name.1").value == "trivia_mine"
    at.button(key="data.set_add").click().run()
    assert list(at.dataframe[-1].value["set"]) == ["my_authors_v2", "trivia_mine"]
    assert add_panel(at).proto.expanded
