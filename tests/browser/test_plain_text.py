"""Real browser: user text is shown as text. Markdown in a dataset (bold,
a formula, an image pointing at a tracker) and in a file name is shown literally; the image
is never fetched."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import chromium_page, needs_browser, streamlit_app, upload, wait_idle

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]

TRACKER = "http://127.0.0.1:9/track.png"
QUESTION = f"**Bold** claim about $x^2$ and ![t]({TRACKER}) :smile: <b>tag</b>?"


def test_dataset_markdown_is_shown_as_text(tmp_path):
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_project

    rows = [{"question": QUESTION, "answer": f"Answer with _emphasis_ and [a link]({TRACKER})"},
            {"question": "A plain second question?", "answer": "A plain answer."}]
    forget = tmp_path / "forget.jsonl"
    forget.write_text("".join(json.dumps(r) + "\n" for r in rows))
    project = create_project("md", forget, root=tmp_path / "workspace")
    project.save_normals(idk_normals(2, 4), "seed")
    requested: list[str] = []
    with streamlit_app(tmp_path) as url, chromium_page() as page:
        page.on("request", lambda r: requested.append(r.url))
        page.goto(url + "/normals?project=md")
        page.get_by_role("heading", name="Normal answers").first.wait_for()
        wait_idle(page)
        main = page.locator('[data-testid="stMain"]')
        expect(main.get_by_text(QUESTION, exact=True).first).to_be_visible()
        assert main.locator("strong", has_text="Bold").count() == 0
        assert main.locator("em", has_text="emphasis").count() == 0
        assert main.locator(".katex").count() == 0
        assert main.locator(f'img[src="{TRACKER}"]').count() == 0

        # a file name with Markdown in an error message, on the Data page
        page.goto(url + "/data?project=md")
        page.get_by_role("heading", name="Data").first.wait_for()
        wait_idle(page)
        page.get_by_text("New project from files").click()
        name = page.get_by_role("textbox", name="project name")
        name.fill("bad")
        name.press("Enter")
        wait_idle(page)
        # a click on Create project before the upload has ended sends no file ("Choose a
        # forget data file first."): upload() waits until the file is the uploader's value
        upload(page, "forget data", "**evil**.jsonl", b'{"question": "q", "answer": ""}\n')
        page.get_by_role("button", name="Create project").click()
        alert = page.locator('[data-testid="stAlertContentError"]').first
        expect(alert).to_contain_text("**evil**.jsonl")
        page.screenshot(path=str(tmp_path / "plain.png"))
    assert not [u for u in requested if u.startswith("http://127.0.0.1:9/")]
