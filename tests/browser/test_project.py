"""Real browser: choose a second project, visit every page through the
sidebar: each shows that project and acts on it; a reload keeps it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import choose, chromium_page, needs_browser, streamlit_app, wait_idle
from tests.helpers.wait import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]

PAGES = [  # sidebar link, page heading, whether the page names the project under its title
    ("Home", "SGA Workbench", False), ("Data", "Data", False),
    ("Normal answers", "Normal answers", True), ("Choose r (r*)", "Choose r from the "
                                                                   "gradients", True),
    ("Train", "Train", True), ("Runs", "Runs", False), ("Results", "Results", True),
    ("Token probabilities", "Token probabilities", True),
    ("Before / after probe", "Before / after probe", True),
]


def picker(page):
    return page.locator('[data-testid="stSidebar"]').get_by_role("combobox", name="Project")


def test_second_project_on_every_page_and_after_a_reload(tmp_path, demo_dir):
    from sga_core.projects import create_demo_project, create_project, load_project

    ws = tmp_path / "workspace"
    create_demo_project(root=ws)
    create_project("tofu", demo_dir / "forget.jsonl", demo_dir / "retain.jsonl", root=ws)
    with streamlit_app(tmp_path) as url, chromium_page() as page:
        page.goto(url)
        page.get_by_role("heading", name="SGA Workbench").wait_for()
        choose(page, "Project", "tofu")
        page.wait_for_url("**project=tofu**")
        for link, heading, names_it in PAGES:
            page.locator('[data-testid="stSidebarNav"]').get_by_role(
                "link", name=link, exact=True).click()
            page.get_by_role("heading", name=heading, exact=True).first.wait_for()
            wait_idle(page)
            expect(picker(page)).to_have_value("tofu")
            if names_it:
                expect(page.get_by_text("project tofu", exact=False).first).to_be_visible()
            if link == "Data":
                expect(page.get_by_role("heading", name="Project: tofu")).to_be_visible()
            assert "project=tofu" in page.url, (link, page.url)
        page.reload()
        page.get_by_role("heading", name="Before / after probe").first.wait_for()
        wait_idle(page)
        expect(picker(page)).to_have_value("tofu")

        # acting on it: normal answers generated on the Normal answers page land in tofu
        page.locator('[data-testid="stSidebarNav"]').get_by_role(
            "link", name="Normal answers", exact=True).click()
        page.get_by_role("heading", name="Normal answers").first.wait_for()
        choose(page, "backend", "idk: K-1 distinct 'I don't know' refusals per row")
        page.get_by_role("button", name="Generate for all forget rows").click()
        wait_for(lambda: load_project("tofu", ws).normals() is not None, 60,
                 "the tofu project's normal answers", interval=0.2)  # its files
        assert load_project("demo", ws).normals() is None
        page.screenshot(path=str(tmp_path / "tofu.png"))
