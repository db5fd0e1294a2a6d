"""Real browser: an open panel (expander) stays open while the person changes a field, in it
or above it. A new user's study saw panels fold shut after a field changed: an expander
without a key is drawn anew when the page above it changes (a note that comes or goes), and
a redrawn one starts folded. Every panel with fields now keeps its open state in the
session (ui.show.panel)."""

from __future__ import annotations

import pytest

from tests.helpers.browser import (
    choose,
    chromium_page,
    needs_browser,
    open_expander,
    streamlit_app,
    wait_idle,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]

PANELS = ("Advanced training settings", "Accelerate (processes, precision")


def is_open(page, label: str) -> bool:
    details = page.locator("details").filter(
        has=page.locator("summary").filter(has_text=label)).first
    return details.get_attribute("open") is not None


def test_train_panels_stay_open_when_a_field_above_them_changes(tmp_path):
    from sga_core.projects import create_demo_project

    create_demo_project(root=tmp_path / "workspace")
    with streamlit_app(tmp_path) as url, chromium_page() as page:
        page.goto(url + "/train")
        page.get_by_role("heading", name="Train").first.wait_for()
        wait_idle(page)
        for label in PANELS:
            open_expander(page, label)
        wait_idle(page)
        # SGA -> GA: the coefficients note and the normal answers line above them go away
        choose(page, "method", "GA (gradient ascent)")
        folded = [label for label in PANELS if not is_open(page, label)]
        assert not folded, f"folded after the method changed: {folded}"
        # a field inside a panel: Enter reruns the page
        field = page.get_by_role("spinbutton").filter(visible=True).last
        field.fill("3")
        field.press("Enter")
        wait_idle(page)
        folded = [label for label in PANELS if not is_open(page, label)]
        assert not folded, f"folded after a field in a panel changed: {folded}"
