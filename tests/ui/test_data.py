"""AppTest flows for the Data and Normal answers pages (docs/spec.md#33-normal-answers)."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from sga_core.projects import list_projects, load_project
from tests.helpers.ui import open_page, shown
from tests.helpers.wait import wait_for

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_demo_project_is_created_and_previewed(ui_env):
    at = open_page("app_pages/data.py")
    assert list_projects(ui_env / "workspace") == ["demo"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["forget rows"] == "10" and metrics["retain rows"] == "110"
    assert "Lucien Marchetti" in at.dataframe[0].value["question"].iloc[0]
    assert any("MB" in m.value for m in at.markdown)  # the size limit is stated


def test_bad_upload_names_file_row_field_and_imports_nothing(ui_env):
    at = open_page("app_pages/data.py")
    bad = b'{"question": "q1", "answer": "a1"}\n{"question": "q2", "answer": ""}\n'
    at.text_input(key="data.name").set_value("mine").run()
    at.get("file_uploader")[0].set_value(("my_forget.jsonl", bad, "application/json")).run()
    at.button(key="data.create").click().run()
    assert not at.exception
    errors = [shown(e.value) for e in at.error]
    assert any("my_forget.jsonl" in e and "row 2" in e and "'answer'" in e for e in errors), errors
    assert list_projects(ui_env / "workspace") == ["demo"]


def test_good_upload_creates_project(ui_env, demo_dir):
    at = open_page("app_pages/data.py")
    at.text_input(key="data.name").set_value("mine").run()
    ups = at.get("file_uploader")
    ups[0].set_value(("f.jsonl", (demo_dir / "forget.jsonl").read_bytes(), "text/plain"))
    ups[1].set_value(("r.csv", b"question,answer\nWho?,Me.\nWhat?,That.\n", "text/csv"))
    at.run()
    at.button(key="data.create").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    p = load_project("mine", ui_env / "workspace")
    assert len(p.forget()) == 10 and len(p.retain()) == 2
    assert at.session_state["project"] == "mine"
    assert any("Project: mine" in h.value for h in at.subheader)


def wait_job(at: AppTest, timeout: float = 60, until=None) -> AppTest:
    """Rerun the page until the job says it saved (or ``until(at)`` holds), or an error."""
    done = until or (lambda a: any("saved to the table" in m.value for m in a.success))
    wait_for(lambda: (at.run(), done(at) or at.error)[1], timeout, "generation to finish",
             interval=0.5)
    return at


def test_generate_idk_saves_review_and_restore(ui_env):
    at = open_page("app_pages/normals.py")
    assert any("No normal answers yet" in i.value for i in at.info)
    at.selectbox(key="normals.backend").set_value("idk").run()
    at.button(key="normals.generate").click().run()
    at = wait_job(at)
    assert not at.error, [e.value for e in at.error]
    assert not at.exception
    # no extra step: the job saved its answers into the table as a new version
    assert not [b for b in at.button if "Apply" in b.label]
    p = load_project("demo", ui_env / "workspace")
    assert "generate-idk-all-rows" in p.history()[0].name
    table = p.normals()
    assert table is not None and table.is_complete(10) and table.k == 4
    assert any("Complete" in s.value for s in at.success)

    at.button(key="normals.review").click().run()
    assert p.reviewed() == {0}
    at.toggle(key="normals.only_open").set_value(True).run()
    options = at.selectbox(key="normals.row").options
    assert len(options) == 9 and not any(o.startswith("✓ 0:") for o in options)
    assert at.selectbox(key="normals.row").value == 1

    # regenerate row 1 only with idk: the other rows stay untouched
    before = {i: table.texts_for(i) for i in range(10)}
    assert at.button(key="normals.regen").label == "Regenerate this row (idk)"
    at.button(key="normals.regen").click().run()
    # the whole table's "saved" message may still show: wait for the row's own
    at = wait_job(at, until=lambda a: any("(idk, row 1)" in shown(m.value) for m in a.success))
    assert any("(idk, row 1)" in shown(m.value) for m in at.success)
    # a reload (new session) keeps the backend of the last generation
    assert open_page("app_pages/normals.py").selectbox(key="normals.backend").value == "idk"
    after = load_project("demo", ui_env / "workspace").normals()
    assert all(after.texts_for(i) == before[i] for i in range(10) if i != 1)

    versions = p.history()
    assert len(versions) >= 2
    at.selectbox(key=f"normals.version_pick.{versions[0].name}").set_value(
        versions[-1].name).run()
    at.button(key="normals.restore").click().run()
    assert load_project("demo", ui_env / "workspace").normals().texts_for(1) == before[1]


def test_import_bad_table_keeps_current(ui_env):
    from sga_core.normals.idk import idk_normals

    at = open_page("app_pages/normals.py")
    p = load_project("demo", ui_env / "workspace")
    p.save_normals(idk_normals(10, 4), "seed")
    at.run()
    bad = json.dumps({"forget_index": 0, "k": 1, "text": "x", "source": "nonsense"}) + "\n"
    at.get("file_uploader")[0].set_value(("bad.jsonl", bad.encode(), "text/plain")).run()
    at.button(key="normals.do_import").click().run()
    assert any("bad.jsonl" in shown(e.value) and "source" in e.value for e in at.error), \
        [e.value for e in at.error]
    assert p.normals().is_complete(10)
