"""Normals for a text project (docs/spec.md#35-normal-answer-backends): the retrieval backend's
form offers what fills the slots below the similarity threshold as a choice (the nearest
retain passages, with their cosine, or "I don't know"), and the local backend starts from
the "continue this passage with different facts" template for text rows with prefixes."""

from __future__ import annotations

import pytest

from tests.helpers.ui import open_page

pytestmark = pytest.mark.slow


def test_text_normals_offer_nearest_or_idk_and_a_text_template(ui_env, demo_dir):
    from sga_core.projects import create_project

    create_project("txt", demo_dir / "text_forget.jsonl", demo_dir / "text_retain.jsonl",
                   kind="text", root=ui_env / "workspace")
    at = open_page("app_pages/normals.py")
    at.selectbox(key="_project_picker").set_value("txt").run()
    at.selectbox(key="normals.backend").set_value("retrieval").run()
    assert not at.exception, at.exception
    below = at.selectbox(key="normals.retrieval.below_threshold")
    assert below.options == ["auto", "nearest", "idk"] and below.value == "auto"
    assert "nearest for text" in below.help
    at.selectbox(key="normals.backend").set_value("local").run()
    assert at.selectbox(key="normals.local.template").value == "text_different_facts"
