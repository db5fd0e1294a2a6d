"""Real browser: a text project's Token probabilities page (docs/token-probabilities.md). The
continuation's tokens are drawn coloured by probability for the Original and the run, the
heatmap is there, the token that fell most (" Mits" of Mitsotakis) is followed first, and a
researcher can switch to " 57" and read its probability under each model."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import (
    choose,
    chromium_page,
    needs_browser,
    streamlit_app,
    wait_idle,
)
from tests.helpers.own_data import text_token_project

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]


def test_text_tokens_page_follows_mitsotakis_and_57(tmp_path, demo_dir):
    text_token_project(tmp_path, demo_dir)
    with streamlit_app(tmp_path) as url, chromium_page() as page:
        page.goto(f"{url}/tokens?project=txt")
        page.get_by_text("Prime Minister Mitsotakis said 57").first.wait_for(timeout=60000)
        wait_idle(page)
        expect(page.locator(".js-plotly-plot")).to_have_count(2)  # heatmap, across steps
        # each model's continuation as coloured token spans, the followed token outlined
        spans = page.locator('span[title="p=0.200"]')
        assert spans.count() == 1 and "Mits" in spans.first.inner_text()
        assert "2px solid" in (spans.first.get_attribute("style") or "")
        assert page.get_by_text("p('Mits') = 0.800").count() == 1
        choose(page, "follow a token", "6: 57")
        page.get_by_text("p('57') = 0.100").first.wait_for()
        assert page.get_by_text("p('57') = 0.600").count() == 1
        assert page.get_by_text("'57' across training steps").count() == 1
        page.screenshot(path=str(tmp_path / "text-tokens.png"), full_page=True)
