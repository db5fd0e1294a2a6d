"""Real browser: the Train form survives a reload. A person sets r, max steps and batch
size, reloads the page (a new session), sees the same values, and Launch queues a run with
them (its config.yaml), not with the defaults as before."""

from __future__ import annotations

import re
from contextlib import contextmanager

import pytest
import yaml
from playwright.sync_api import expect

from tests.helpers.browser import chromium_page, needs_browser, streamlit_app, wait_idle
from tests.helpers.own_data import own_project, tofu_files

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]


def set_number(page, label: str, value) -> None:
    box = page.get_by_role("spinbutton", name=label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    expect(box).to_have_value(str(value), timeout=30000)
    wait_idle(page)


@contextmanager
def train_page(tmp_path):
    """The Train page of a TOFU-shaped project "mine" with seed normals: (project, page)."""
    from sga_core.normals.idk import idk_normals

    project = own_project(tmp_path / "workspace", tofu_files(tmp_path / "files"))
    project.save_normals(idk_normals(len(project.forget()), 4), "seed")
    with streamlit_app(tmp_path) as url, chromium_page() as page:
        page.goto(f"{url}/train?project=mine")
        page.get_by_role("heading", name="Train").first.wait_for(timeout=60000)
        wait_idle(page)
        yield project, page


def saved(project, *keys) -> tuple:
    """The Train form's values kept on disk (None before the first save)."""
    import json

    path = project.path / "train_form.json"
    values = json.loads(path.read_text())["values"] if path.exists() else {}
    return tuple(values.get(k) for k in keys)


def test_train_form_values_survive_a_reload_and_launch_uses_them(tmp_path, tiny_model_dir):
    from tests.helpers.wait import wait_for

    with train_page(tmp_path) as (project, page):
        model = page.get_by_role("textbox", name=re.compile("^model "))
        model.fill(str(tiny_model_dir))
        model.press("Enter")
        wait_idle(page)
        set_number(page, "r (exact)", -1.3)
        set_number(page, "max steps", 3)
        set_number(page, "batch size", 2)
        evaluate = page.get_by_role("checkbox", name=re.compile("^evaluate when the run"))
        evaluate.uncheck(force=True)  # waits until the box reads unchecked
        wait_idle(page)
        expect(evaluate).not_to_be_checked(timeout=30000)
        # the box reads unchecked before the page's run that keeps it has ended: reload
        # once the values are kept (a reload ends the session, and a run under way with it)
        keys = ("train.f.m.sga.r", "train.f.t.max_steps", "train.f.t.batch_size", "train.eval")
        wait_for(lambda: saved(project, *keys) == (-1.3, 3, 2, False), 120,
                 lambda: f"the form's values on disk (r, max steps, batch size, evaluate: "
                         f"{saved(project, *keys)})")

        page.reload()
        page.get_by_role("heading", name="Train").first.wait_for(timeout=60000)
        wait_idle(page)
        for label, value in (("r (exact)", "-1.3"), ("max steps", "3"), ("batch size", "2")):
            expect(page.get_by_role("spinbutton", name=label, exact=True)).to_have_value(
                value, timeout=30000)
        expect(page.get_by_role("textbox", name=re.compile("^model "))).to_have_value(
            str(tiny_model_dir))
        expect(page.get_by_role("checkbox", name=re.compile("^evaluate when the run"))
               ).not_to_be_checked(timeout=30000)
        page.screenshot(path=str(tmp_path / "reloaded.png"), full_page=True)

        page.get_by_role("button", name="Launch").click()
        queued = page.get_by_text("Queued run")
        queued.wait_for(timeout=60000)
        run_id = re.search(r"Queued run (\S+)\.", queued.inner_text()).group(1)
    cfg = yaml.safe_load((tmp_path / "runs" / run_id / "config.yaml").read_text())
    assert cfg["method_args"]["r"] == -1.3
    assert cfg["training"]["max_steps"] == 3 and cfg["training"]["batch_size"] == 2
    assert cfg["model"] == str(tiny_model_dir)
    assert cfg["eval"]["enabled"] is False


def test_an_emptied_number_box_gets_its_last_value_back(tmp_path):
    """A person empties a number box to type anew and clicks elsewhere: the box shows the
    value it had, and the form keeps it (Streamlit otherwise puts the box's minimum in: r
    became -100, the slider -10, and a batch size 1)."""
    from tests.helpers.wait import wait_for

    with train_page(tmp_path) as (project, page):
        set_number(page, "r (exact)", -1.3)
        set_number(page, "batch size", 2)
        # the box reads what was typed before the page has kept it: empty it once it has
        wait_for(lambda: saved(project, "train.f.m.sga.r", "train.f.t.batch_size")
                 == (-1.3, 2), 60, lambda: "the typed values on disk (r, batch size: "
                 f"{saved(project, 'train.f.m.sga.r', 'train.f.t.batch_size')})")
        for label, value in (("r (exact)", "-1.3"), ("batch size", "2")):
            box = page.get_by_role("spinbutton", name=label, exact=True)
            box.fill("")
            box.press("Tab")  # leaves the box empty
            wait_idle(page)
            expect(box).to_have_value(value, timeout=30000)
        slider = page.get_by_role("slider", name=re.compile("smoothing rate r"))
        expect(slider).to_have_value("-1.3", timeout=30000)

    assert wait_for(lambda: saved(project, "train.f.m.sga.r", "train.f.t.batch_size")
                    == (-1.3, 2), 60, "the form's values on disk")


def test_a_value_typed_while_the_page_reruns_for_another_is_kept(tmp_path):
    """A person types r into its exact box and, before the page has redrawn, a batch size:
    the second change cuts the page's run for the first short, so the browser still shows
    the slider at the old r and sends it back with the batch size. That is not a move of
    the slider: r stays what was typed (it went back to -0.8 under load)."""
    from tests.helpers.browser import wait_idle
    from tests.helpers.wait import wait_for

    with train_page(tmp_path) as (project, page):
        exact = page.get_by_role("spinbutton", name="r (exact)", exact=True)
        batch = page.get_by_role("spinbutton", name="batch size", exact=True)
        exact.fill("-1.3")
        exact.press("Enter")
        batch.fill("2")  # at once: the page is still running for r
        batch.press("Enter")
        wait_for(lambda: saved(project, "train.f.t.batch_size") == (2,), 60,
                 lambda: f"the batch size on disk (saw {saved(project, 'train.f.t.batch_size')})",
                 sleep=lambda s: page.wait_for_timeout(s * 1000))
        wait_idle(page)
        assert saved(project, "train.f.m.sga.r") == (-1.3,)
        expect(exact).to_have_value("-1.3")
        expect(page.get_by_role("slider", name=re.compile("smoothing rate r"))
               ).to_have_value("-1.3")
