"""Real browser: Enter in a stress form's field submits nothing. A new user typed 0 into the
Runs page's *seeds* and pressed Enter: the form (an ``st.form``, which submits on Enter by
default) queued a stress test with the other settings at their defaults, hours of work on a
CPU, before they clicked Stress-test. Only the button queues one."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sga_core.runs.folder import RunFolder
from tests.helpers.browser import chromium_page, needs_browser, streamlit_app, wait_idle
from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files
from tests.helpers.stress import runner_lock
from tests.helpers.wait import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]


def test_enter_in_a_stress_setting_queues_nothing_the_button_does(tmp_path):
    project = own_project(tmp_path / "workspace", tofu_files(tmp_path / "files"))
    runs = tmp_path / "runs"
    run = fake_run(runs, project, "sga-one", metrics=metrics())
    (RunFolder(run).model_dir).mkdir(parents=True)
    (RunFolder(run).model_dir / "config.json").write_text("{}")
    with runner_lock(runs), streamlit_app(tmp_path) as url, chromium_page() as page:
        page.goto(f"{url}/runs?project=mine")
        page.get_by_text("attack settings").first.wait_for(timeout=60000)
        wait_idle(page)
        page.get_by_text("attack settings").first.click()
        seeds = page.get_by_role("textbox", name="seeds")
        seeds.fill("0")
        seeds.press("Enter")
        wait_idle(page)
        expect(seeds).to_have_value("0")  # typed, kept, and nothing submitted
        assert not RunFolder(run).stress_requested()
        page.get_by_role("button", name="Stress-test").click()
        wait_for(lambda: RunFolder(run).stress_requested(), 60, "the button to queue it")
        assert RunFolder(run).stress_request()["settings"] == {"seeds": [0]}
        assert page.locator('[data-testid="stException"]').count() == 0
