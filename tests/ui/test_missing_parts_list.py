"""What a project still lacks before training is a short list, one missing part a line, not
one long paragraph: the sets its protocol promises and the normal answers SGA trains on."""

from __future__ import annotations

import pytest

from tests.helpers.own_data import muse_text_project
from tests.helpers.ui import open_page

pytestmark = pytest.mark.slow


def test_the_train_page_lists_what_the_project_lacks(ui_env):
    muse_text_project(ui_env, ui_env / "workspace", sets=("forget_qa", "retain_qa"))
    at = open_page("app_pages/train.py", "books")

    (gaps,) = [w.value for w in at.warning if w.value.startswith("In this project:")]
    lines = gaps.splitlines()[1:]
    assert len(lines) == 3, gaps  # two few-shot sets and the VerbMem passages
    assert all(line.startswith("- no ") for line in lines), lines
    assert "forget\\_qa\\_icl set" in lines[0] and "retain\\_qa\\_icl set" in lines[1]
    assert "forget\\_eval set" in lines[2]
    assert not any("In this project" in c.value for c in at.caption)  # not in the paragraph

    (normals,) = [w.value for w in at.warning if w.value.startswith("Normal answers")]
    assert normals.splitlines()[:2] == ["Normal answers are not ready:",
                                        "- no normal answers yet"], normals
