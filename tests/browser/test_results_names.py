"""Real browser: a long run name in the Results table stays inside its column (cut with an
ellipsis, the whole name on hover) after Streamlit sanitises the table's HTML; before, it
ran into the method column."""

from __future__ import annotations

import pytest

from tests.helpers.browser import chromium_page, needs_browser, streamlit_app, wait_idle
from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]

FITS = """cell => ({cut: cell.scrollWidth > cell.clientWidth,
                   right: cell.getBoundingClientRect().right,
                   next: cell.nextElementSibling.getBoundingClientRect().left,
                   overflow: getComputedStyle(cell).textOverflow})"""


def test_a_long_run_name_stays_in_its_column(tmp_path):
    project = own_project(tmp_path / "workspace", tofu_files(tmp_path / "files"))
    for i, lr in enumerate((1e-5, 2e-6)):  # names carry their differing settings
        fake_run(tmp_path / "runs", project, f"sga-lr{i}", r=-0.8, metrics=metrics(fq=0.1 * i),
                 training={"lr": lr, "max_steps": 10 + i, "batch_size": 2 + i,
                           "warmup_steps": 3 * i, "weight_decay": 0.01 * i})
    with streamlit_app(tmp_path) as url, chromium_page() as page:
        page.goto(f"{url}/results?project=mine")
        cells = page.locator('td[data-col="run"]')
        cells.first.wait_for(timeout=60000)
        wait_idle(page)
        names = [c.get_attribute("title") for c in cells.all()]
        longest = max(names, key=len)
        assert len(longest) > 40, names
        cell = page.locator(f'td[data-col="run"][title="{longest}"]')
        m = cell.evaluate(FITS)
        assert m["cut"] and m["overflow"] == "ellipsis", m
        assert m["right"] <= m["next"], m  # ends before the method column starts
        page.screenshot(path=str(tmp_path / "results.png"), full_page=True)
