"""The Data page takes MUSE's own file shapes as text data: a JSON list of strings as the
forget data, a .txt of blank-line-separated passages as the retain data and as an evaluation
set; the project is a text project offered the muse protocol."""

from __future__ import annotations

import json

import pytest

from sga_core.projects import load_project
from tests.helpers.muse_files import forget_articles
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow


def test_a_list_of_strings_and_a_txt_make_a_text_project(ui_env):
    at = open_page("app_pages/data.py")
    at.text_input(key="data.name").set_value("news").run()
    ups = at.get("file_uploader")
    ups[0].set_value(("forget.json", json.dumps(forget_articles()).encode(),
                      "application/json"))
    ups[1].set_value(("retain.txt", b"First retain passage.\n\nSecond one,\non two lines.\n",
                      "text/plain"))
    at.run()
    at.button(key="data.create").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    project = load_project("news", ui_env / "workspace")
    assert project.kind == "text" and len(project.forget()) == len(forget_articles())
    assert [r["text"] for r in project.retain()] == ["First retain passage.",
                                                    "Second one,\non two lines."]
    assert any("choose **muse**" in i.value for i in at.info), [i.value for i in at.info]
    at.get("file_uploader")[2].set_value(
        ("extra.txt", b"An extra passage.\n\nAnother.\n", "text/plain")).run()
    assert at.text_input(key="data.set_name.0").value == "extra"
    at.button(key="data.set_add").click().run()
    assert any("Added extra (2 rows): extra text set: perplexity" in shown(s.value)
               for s in at.success), [s.value for s in at.success]
