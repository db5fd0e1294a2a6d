"""The chosen project cannot drift (docs/decisions/006-project-context-in-the-url.md): one choice in
session state and the URL, read by every page; a page switch, a new session with the link, and page
actions keep it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.ui import shown

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGES = ["home", "data", "normals", "rstar", "train", "runs", "results", "tokens", "probe"]


@pytest.fixture()
def two_projects(ui_env, demo_dir):
    from sga_core.projects import create_demo_project, create_project

    create_demo_project(root=ui_env / "workspace")
    create_project("tofu", demo_dir / "forget.jsonl", demo_dir / "retain.jsonl",
                   root=ui_env / "workspace")
    return ui_env


def names_the_project(at: AppTest, name: str) -> bool:
    texts = [shown(e.value) for kind in ("caption", "markdown", "subheader")
             for e in at.get(kind)]
    return any(re.search(rf"project[\s*:]*{re.escape(name)}\b", t.lower()) for t in texts)


def test_the_choice_survives_every_page_switch(two_projects):
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert at.selectbox(key="_project_picker").value == "demo"
    at.selectbox(key="_project_picker").set_value("tofu").run()
    for page in PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        assert at.session_state["project"] == "tofu", page
        assert at.selectbox(key="_project_picker").value == "tofu", page
        assert at.query_params["project"] == "tofu", page
    # pages that act on a project name it
    for page in ("data", "normals", "train", "results"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert names_the_project(at, "tofu"), page


def test_a_link_to_a_missing_project_says_so(two_projects):
    """A link (or bookmark) naming a project that is not here opens another one and says so,
    instead of switching silently."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["project"] = "nonexistent"
    at.run()
    assert at.session_state["project"] == "demo"
    warned = " ".join(shown(w.value) for w in at.sidebar.warning)
    assert "no project named nonexistent" in warned and "showing demo" in warned, warned
    at.switch_page("app_pages/train.py").run()  # said once, not on every page
    assert not at.sidebar.warning


def test_a_link_with_the_project_opens_it(two_projects):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["project"] = "tofu"
    at.run()
    assert at.session_state["project"] == "tofu"
    at.switch_page("app_pages/train.py").run()
    assert at.selectbox(key="_project_picker").value == "tofu"
    assert names_the_project(at, "tofu")


def test_an_unknown_project_in_the_link_falls_back(two_projects):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["project"] = "../../etc"
    at.run()
    assert not at.exception
    assert at.session_state["project"] == "demo"
    assert at.query_params["project"] == "demo"
