"""The Train form's values are kept per project on disk (train_form.json), so a browser
reload, which starts a new session, shows the values a person set instead of the defaults
(a Launch after a reload used to run with the defaults, silently). A stored value that no
longer fits its field starts from its default, with a note; never a traceback."""

from __future__ import annotations

import json

import pytest

from sga_core.projects import create_demo_project
from sga_core.projects.train_form import FILE, load_train_form, save_train_form
from tests.helpers.own_data import own_project, tofu_files
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow


def test_library_keeps_values_and_drops_those_that_no_longer_fit(tmp_path):
    project = own_project(tmp_path / "ws", tofu_files(tmp_path / "files"))
    assert load_train_form(project) == ({}, [])
    values = {"train.f.t.max_steps": 7, "train.f.t.batch_size": 3, "train.f.m.sga.r": -1.2,
              "train.f.m.sga.r.exact": -1.2, "train.method": "sga", "train.run_id": "x"}
    assert save_train_form(project, values) is True
    assert save_train_form(project, values) is False  # unchanged: not written again
    stored, notes = load_train_form(project)
    assert notes == [] and "train.run_id" not in stored  # a run id names one run
    assert stored == {k: v for k, v in values.items() if k != "train.run_id"}
    (project.path / FILE).write_text(json.dumps({"values": {
        "train.f.t.max_steps": "abc", "train.f.t.batch_size": 0, "train.f.m.gone.r": 1.0,
        "train.f.t.no_such": 1, "train.f.m.sga.r.exact": -0.5}}))
    stored, notes = load_train_form(project)
    assert stored == {"train.f.m.sga.r.exact": -0.5}
    text = " | ".join(notes)
    for what in ("max_steps", "batch_size", "gone", "no_such"):
        assert what in text, text
    (project.path / FILE).write_text("{not json")
    stored, notes = load_train_form(project)
    assert stored == {} and FILE in notes[0] and "unreadable" in notes[0]


def pick(at, name):
    at.selectbox(key="_project_picker").set_value(name).run()
    assert not at.exception, at.exception


def test_a_new_session_keeps_the_train_form_per_project(ui_env):
    create_demo_project(root=ui_env / "workspace")
    mine = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    at = open_page("app_pages/train.py")
    pick(at, "mine")
    at.number_input(key="train.f.t.max_steps").set_value(13).run()
    at.number_input(key="train.f.t.batch_size").set_value(3).run()
    at.number_input(key="train.f.m.sga.r.exact").set_value(-1.3).run()
    assert not at.exception, at.exception
    pick(at, "demo")  # the demo starts from its preset, not from mine's values
    demo_steps = at.number_input(key="train.f.t.max_steps").value
    assert demo_steps != 13

    # a reload: a new session, the same project
    at = open_page("app_pages/train.py")
    pick(at, "mine")
    assert at.number_input(key="train.f.t.max_steps").value == 13
    assert at.number_input(key="train.f.t.batch_size").value == 3
    assert at.number_input(key="train.f.m.sga.r.exact").value == -1.3
    assert at.slider(key="train.f.m.sga.r.slider").value == -1.3
    assert not at.warning or not any("train_form.json" in w.value for w in at.warning)

    # a stored value that no longer fits: its default, with a note naming it
    data = json.loads((mine.path / FILE).read_text())
    data["values"]["train.f.t.batch_size"] = "lots"
    data["values"]["train.f.t.max_steps"] = -5
    (mine.path / FILE).write_text(json.dumps(data))
    at = open_page("app_pages/train.py")
    pick(at, "mine")
    assert not at.exception, at.exception
    assert at.number_input(key="train.f.t.batch_size").value == 8  # the default
    assert at.number_input(key="train.f.t.max_steps").value == 0
    assert at.number_input(key="train.f.m.sga.r.exact").value == -1.3  # the rest is kept
    notes = " ".join(shown(w.value) for w in at.warning)
    assert "batch_size" in notes and "max_steps" in notes and FILE in notes, notes
