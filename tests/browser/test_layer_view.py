"""Real browser: the layer view on Token probabilities (docs/token-probabilities.md#the-layer-view).
Three really evaluated hand-built models (tests/helpers/hidden_fact.py): a run whose last
block pushed "French" out of the output while its middle layers still say it, the Original
that says it, and a Retained model never shown it. The page draws the models-by-layers
heatmap of the followed token and says, per model, its first top-1 layer, its rank at the
last layer, and that the run's answer is still top-1 at layers 2-3 of 4."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sga_core.report.layers import layer_facts, layer_table, layer_words
from tests.helpers.browser import chromium_page, needs_browser, streamlit_app, wait_idle
from tests.helpers.hidden_fact import hidden_fact_project

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]


def test_the_layer_view_shows_the_answer_the_head_removed(tmp_path):
    runs = hidden_fact_project(tmp_path)
    facts = {name: layer_facts(layer_table(run)[0], 0) for name, run in runs.items()}
    assert facts["unlearned"]["hidden"] and facts["unlearned"]["last_rank"] > 100
    with streamlit_app(tmp_path) as url, chromium_page() as page:
        page.goto(f"{url}/tokens?project=hf")
        page.get_by_text("'F' layer by layer").first.wait_for(timeout=60000)
        wait_idle(page)
        hidden = page.get_by_text("but still top-1 at layers 2-3 of 4")
        hidden.first.wait_for()  # the page has drawn the layer view to its end
        expect(page.locator(".js-plotly-plot")).to_have_count(2)  # the token and layer heatmaps
        layers = page.locator(".js-plotly-plot").nth(1)
        assert "p('F') at every layer" in layers.inner_text()
        assert "layer 4 is the output" in layers.inner_text()
        for model in ("Original", "Retained", "ga"):  # the run ga-head is shown as "ga"
            assert model in layers.inner_text()
        assert hidden.count() == 1
        assert "'F' is out of the output (rank" in hidden.first.inner_text()
        for name in ("original", "control", "unlearned"):  # what the files say, in words
            assert page.get_by_text(layer_words(facts[name])).count() == 1, name
        assert "is the output's top-1" in layer_words(facts["original"])  # nothing hidden
        assert "and top-1 at no layer" in layer_words(facts["control"])
        table = page.locator('[data-testid="stTable"]').filter(has_text="first top-1 layer")
        # .all() does not wait: on a loaded machine the table may still be drawing
        table.first.locator("tbody tr").filter(has_text="Retained").first.wait_for()
        rows = [[c.strip() for c in r.locator("th, td").all_inner_texts()]
                for r in table.first.locator("tbody tr").all()]
        rows = [r[r.index(m):] for r in rows for m in ("Original", "ga", "Retained") if m in r]
        assert [r[:3] for r in rows] == [
            ["Original", "2", "1"], ["ga", "2", str(facts["unlearned"]["last_rank"])],
            ["Retained", "none", str(facts["control"]["last_rank"])]]
        assert page.get_by_text("is damaged").count() == 0
        layers.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "layer-view.png"))
