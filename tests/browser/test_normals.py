"""Real browser: edit a normal answer in the table, reload, find the edit."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import chromium_page, needs_browser, streamlit_app, wait_idle
from tests.helpers.wait import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]


def test_edit_normal_answer_survives_reload(tmp_path):
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project, load_project

    project = create_demo_project(root=tmp_path / "workspace")
    project.save_normals(idk_normals(10, 4), "seed")
    first = project.normals().texts_for(0)[0]
    new_text = "Edited in a real browser: no idea who that is."
    with streamlit_app(tmp_path) as url, chromium_page() as page:
        page.goto(url + "/normals")
        grid = page.locator('[data-testid="stDataFrame"]').first
        grid.wait_for()
        has_text = ("t => document.querySelector('[data-testid=\"stDataFrame\"]').innerHTML"
                    ".includes(t)")
        page.wait_for_function(has_text, arg=first, timeout=30000)  # the grid's cell texts
        wait_idle(page)
        # first data row of the first ("normal answer") column
        editor = page.locator("textarea").first

        def editor_open() -> bool:  # select the cell and open its editor
            box = grid.bounding_box()  # where the grid is now (a rerun may move it)
            page.mouse.click(box["x"] + 80, box["y"] + 35 + 17)
            page.keyboard.press("Enter")
            try:
                editor.wait_for(state="visible", timeout=10000)
                return True
            except Exception:  # a rerun got between (a loaded machine): again
                wait_idle(page)
                return False

        wait_for(editor_open, 120, "the cell editor to open")
        editor.fill(new_text)
        expect(editor).to_have_value(new_text)
        page.keyboard.press("Enter")  # commit: Streamlit reruns and the page saves

        def saved_text():
            return load_project("demo", tmp_path / "workspace").normals().texts_for(0)[0]

        wait_for(lambda: saved_text() == new_text, 20,
                 lambda: f"the edit saved (saved: {saved_text()!r})")  # the page's file
        page.wait_for_function(has_text, arg=new_text, timeout=20000)
        wait_idle(page)
        page.reload()
        grid = page.locator('[data-testid="stDataFrame"]').first
        grid.wait_for()
        wait_idle(page)
        page.wait_for_function(has_text, arg=new_text, timeout=20000)
        page.screenshot(path=str(tmp_path / "after_reload.png"))
    saved = load_project("demo", tmp_path / "workspace").normals()
    assert saved.get(0, 1).source == "manual" and saved.get(0, 1).edited
    assert saved.texts_for(0)[1:] == idk_normals(10, 4).texts_for(0)[1:]
