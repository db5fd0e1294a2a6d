"""Resetting the demo is asked first, and keeps its normal-answer history;
import notes are shown as warnings, never folded under a success message."""

from __future__ import annotations

from sga_core.data import NormalAnswer, NormalTable
from sga_core.projects import load_project
from tests.helpers.ui import open_page, shown


def _edit(ws) -> list[str]:
    demo = load_project("demo", ws)
    demo.save_normals(NormalTable(k=demo.k, answers=[NormalAnswer(0, 1, "mine", "manual")]),
                      reason="edit")
    return [v.name for v in demo.history()]


def test_one_click_does_not_reset_the_demo(ui_env):
    at = open_page("app_pages/data.py")
    ws = ui_env / "workspace"
    before = _edit(ws)
    at.button(key="data.demo").click().run()
    assert not at.exception
    demo = load_project("demo", ws)
    assert [a.text for a in demo.normals().answers] == ["mine"]  # nothing replaced yet
    assert any("Reset the demo project?" in w.value for w in at.warning)
    at.button(key="data.demo.no").click().run()
    assert [a.text for a in load_project("demo", ws).normals().answers] == ["mine"]
    assert not any("Reset the demo project?" in w.value for w in at.warning)
    assert [v.name for v in load_project("demo", ws).history()] == before


def test_a_confirmed_reset_keeps_the_history(ui_env):
    at = open_page("app_pages/data.py")
    ws = ui_env / "workspace"
    before = _edit(ws)
    at.button(key="data.demo").click().run()
    at.button(key="data.demo.yes").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    demo = load_project("demo", ws)
    assert demo.normals() is None  # the data are afresh ...
    names = [v.name for v in demo.history()]
    assert set(before) <= set(names) and "before-reset" in names[0]  # ... the answers kept
    # and the page says what it did, once it has done it
    (said,) = [shown(s.value) for s in at.success]
    assert said.startswith("Reset the demo project **demo**: its forget data (10 rows)")
    assert "are written afresh" in said
    assert f"Its normal-answer history is kept ({len(names)} versions)" in said
    at.run()
    assert not at.success  # said once


def test_import_notes_are_shown_as_a_warning(ui_env):
    at = open_page("app_pages/data.py")
    load_project("demo", ui_env / "workspace").update_meta(
        benchmark="muse-books", import_notes=["subset: verbmem/forget.json: none of its 100 "
                                              "passages is found; the set is left out"])
    at.run()
    assert any("Import notes" in w.value for w in at.warning)
    assert any("the set is left out" in t.value for t in at.text)
    assert not [e for e in at.expander if e.label.startswith("Import notes")]
