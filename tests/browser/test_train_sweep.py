"""Real browser: the Sweep over r panel stays open across the reruns a person makes while
filling it in: Enter in its fields, and a command preview or launch above it (a trial saw
it fold away under the cursor after pressing Enter in the r values field)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import (
    chromium_page,
    needs_browser,
    open_expander,
    streamlit_app,
    wait_idle,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]

# counts the changes of the page's script state, so a test can wait for the rerun an action
# causes (the app root's state attribute alone may still read 'notRunning' before it
# starts). Every change is counted, not the state read when the observer is called: on a
# loaded machine a whole rerun can pass between two calls, and the state then read is
# 'notRunning' again.
COUNT_RUNS = """() => { window.__runs = 0;
  const root = document.querySelector('[data-test-script-state]');
  new MutationObserver((changes) => { window.__runs += changes.length; })
    .observe(root, {attributes: true, attributeFilter: ['data-test-script-state']}); }"""


def rerun_after(page, action) -> None:
    """Do ``action`` and wait until the rerun it starts has finished."""
    wait_idle(page)  # no earlier rerun still ending: a change counted now is the action's
    before = page.evaluate("window.__runs")
    action()
    page.wait_for_function(f"() => window.__runs > {before}", timeout=60000)
    wait_idle(page)


def test_the_sweep_panel_stays_open_while_it_is_filled_in(tmp_path):
    from sga_core.projects import create_demo_project

    create_demo_project(root=tmp_path / "workspace")
    with streamlit_app(tmp_path) as url, chromium_page() as page:
        page.goto(url + "/train")
        page.get_by_role("heading", name="Train").first.wait_for()
        wait_idle(page)
        page.evaluate(COUNT_RUNS)
        open_expander(page, "Sweep over r")
        panel = page.locator("details").filter(
            has=page.locator("summary").filter(has_text="Sweep over r")).first
        field = page.get_by_role("textbox", name="r values")
        steps = [("Enter in r values", lambda: (field.fill("-1, 0"), field.press("Enter"))),
                 ("Preview command",
                  lambda: page.get_by_role("button", name="Preview command").click()),
                 ("Enter after a preview",
                  lambda: (field.fill("-1:0:0.5"), field.press("Enter")))]
        for what, action in steps:
            rerun_after(page, action)
            assert panel.get_attribute("open") is not None, f"panel folded after {what}"
            expect(field).to_be_visible()
        expect(field).to_have_value("-1:0:0.5")
