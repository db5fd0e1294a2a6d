"""Real browser: long probe-token lines wrap. A run whose probe answer is
hundreds of tokens long (and one token longer than the line) must not widen the page: the
main area's scroll width stays its visible width, on the Runs page and on the Token
probabilities page. Only a browser lays the line out, so only a browser can tell."""

from __future__ import annotations

import json

import pytest

from tests.helpers.browser import chromium_page, needs_browser, streamlit_app, wait_idle
from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]

TOKENS = [" French", " prose", ",", " long", " sentences"] * 80 + [" " + "x" * 400]
MEASURE = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  return {main: main ? main.scrollWidth - main.clientWidth : null,
          page: document.documentElement.scrollWidth - window.innerWidth,
          spans: document.querySelectorAll('span[title^="p="]').length};
}"""


def long_answer_run(tmp_path):
    files = tofu_files(tmp_path / "files")
    project = own_project(tmp_path / "workspace", files)
    run = fake_run(tmp_path / "runs", project, "sga-long", metrics=metrics())
    probs = [((i * 37) % 100) / 100 for i in range(len(TOKENS))]
    with open(run / "probes.jsonl", "w") as fh:
        for step in (0, 2):
            fh.write(json.dumps({"step": step, "forget_index": 4, "tokens": TOKENS,
                                 "probs": probs}) + "\n")
    with open(run / "eval" / "tokens.jsonl", "w") as fh:
        fh.write(json.dumps({"set": "forget", "index": 4, "tokens": TOKENS, "probs": probs,
                             "top": [[[t, p]] for t, p in zip(TOKENS, probs)]}) + "\n")
    return project


def test_long_probe_token_lines_wrap(tmp_path):
    long_answer_run(tmp_path)
    with streamlit_app(tmp_path) as url, chromium_page(viewport=(1200, 900)) as page:
        for path in ("/runs", "/tokens"):
            page.goto(f"{url}{path}?project=mine")
            page.locator('span[title^="p="]').first.wait_for(timeout=60000)
            wait_idle(page)
            m = page.evaluate(MEASURE)
            page.screenshot(path=str(tmp_path / f"{path[1:]}.png"), full_page=True)
            assert m["spans"] >= len(TOKENS), m
            assert m["main"] is not None and m["main"] <= 0, (path, m)
            assert m["page"] <= 0, (path, m)


def test_missing_values_keep_their_reason_in_the_browser(tmp_path):
    """Point 5: Streamlit sanitises st.html; the hover text of a "—" (its title) and of a
    collapse flag must survive it."""
    from tests.helpers.own_data import fake_run

    project = long_answer_run(tmp_path)
    fake_run(tmp_path / "runs", project, "mine-original", method="finetune",
             metrics=metrics(r_prob=0.9, mu=(None, "missing components: retain_rouge")))
    fake_run(tmp_path / "runs", project, "sga-broken", r=0.0,
             metrics=metrics(r_prob=1e-6, mu=(None, "no utility set")))
    with streamlit_app(tmp_path) as url, chromium_page() as page:
        page.goto(f"{url}/results?project=mine")
        cell = page.locator('tr[data-run="sga r=0"] td[data-col="MU"]')
        cell.wait_for(timeout=60000)
        assert cell.inner_text() == "—" and cell.get_attribute("title") == "no utility set"
        flag = page.locator('tr[data-run="sga r=0"] td[data-col="collapsed"]')
        assert flag.inner_text() == "collapsed" and "retain prob" in flag.get_attribute("title")
