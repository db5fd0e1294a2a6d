"""Real browser: deleting a run from the Runs page. Ticking "confirm delete" and pressing
Delete removes the run without a traceback, and the run picker no longer lists it (no reload
needed); the other run stays."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import chromium_page, needs_browser, streamlit_app, wait_idle
from tests.helpers.own_data import fake_run, own_project, tofu_files

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]


def test_delete_a_run_without_a_traceback_and_the_picker_drops_it(tmp_path):
    project = own_project(tmp_path / "workspace", tofu_files(tmp_path / "files"))
    runs = tmp_path / "runs"
    fake_run(runs, project, "keep-me")
    gone = fake_run(runs, project, "delete-me")
    with streamlit_app(tmp_path) as url, chromium_page() as page:
        page.goto(f"{url}/runs?project=mine")
        box = page.locator('[data-testid="stSelectbox"]').filter(has_text="run").first
        box.wait_for(timeout=60000)
        wait_idle(page)
        if "delete-me" not in box.get_by_role("combobox").input_value():
            box.click()
            page.get_by_role("option", name="delete-me — completed").click()
            wait_idle(page)
        expect(box.get_by_role("combobox")).to_have_value("delete-me — completed")
        page.get_by_text("confirm delete").click()
        wait_idle(page)
        delete = page.get_by_role("button", name="Delete")
        expect(delete).to_be_enabled(timeout=30000)
        delete.click()
        # the picker moves to the remaining run by itself, no reload
        expect(box.get_by_role("combobox")).to_have_value("keep-me — completed",
                                                          timeout=60000)
        wait_idle(page)
        page.screenshot(path=str(tmp_path / "deleted.png"), full_page=True)
        assert not gone.exists()
        assert page.locator('[data-testid="stException"]').count() == 0, \
            page.locator('[data-testid="stException"]').first.inner_text()
        box.click()
        names = page.get_by_role("option").all_inner_texts()
        assert names == ["keep-me — completed"], names
        page.keyboard.press("Escape")
        # the box is unticked again: a second delete needs a second confirmation
        expect(page.get_by_role("button", name="Delete")).to_be_disabled()
