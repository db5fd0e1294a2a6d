"""train_form.json damaged past what the kept-form tests cover: nested deeper than Python's
recursion allows, or an integer too large to convert to a float. The Train page renders,
the form starts from its defaults for what cannot be used, and a note says so."""

from __future__ import annotations

import json

import pytest

from sga_core.projects import create_demo_project
from sga_core.projects.train_form import load_train_form
from tests.helpers.ui import open_page

DAMAGE = {
    "deep": '{"values": ' + "[" * 100000 + "]" * 100000 + "}",
    "huge int": json.dumps({"values": {"train.f.t.max_steps": 10**400}}),
    "huge int below": json.dumps({"values": {"train.f.t.max_steps": -10**400}}),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_train_page_renders_with_a_damaged_form_file(ui_env, damage):
    project = create_demo_project(root=ui_env / "workspace")
    (project.path / "train_form.json").write_text(DAMAGE[damage])
    values, notes = load_train_form(project)
    assert values == {} and len(notes) == 1 and "train_form.json" in notes[0], notes
    at = open_page("app_pages/train.py")
    assert any("train_form.json" in w.value.replace("\\", "") for w in at.warning)
