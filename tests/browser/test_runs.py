"""Real browser: launch a run from the Train page, watch its progress change with
no clicks, cancel it; launch again, SIGKILL the job, and see it marked failed within 10 s."""

from __future__ import annotations

import os
import re
import signal

import pytest
import yaml
from playwright.sync_api import expect

from tests.helpers.browser import (
    choose,
    chromium_page,
    needs_browser,
    open_expander,
    streamlit_app,
    wait_idle,
)
from tests.helpers.wait import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]


def launch_from_train_page(page, url):
    """Load the long.yaml preset on the Train page and launch; waits on what the page shows
    (the preset's values in the form, the "Queued run" message), never on fixed delays."""
    page.goto(url + "/train")
    page.get_by_role("heading", name="Train").first.wait_for()
    wait_idle(page)
    open_expander(page, "Presets (YAML)")
    choose(page, "preset", "long.yaml")
    page.get_by_role("button", name="Load preset").click()
    # the preset's 100000 steps are in the form
    expect(page.get_by_role("spinbutton", name="max steps")).to_have_value("100000",
                                                                   timeout=30000)
    wait_idle(page)
    page.get_by_role("button", name="Launch").click()
    page.get_by_text("Queued run").wait_for(timeout=60000)
    return re.search(r"Queued run (\S+)\.", page.get_by_text("Queued run").inner_text()
                     ).group(1)


def live_state(page, state: str):
    """The live view's visible state line, e.g. '**run-id** - cancelled'."""
    return page.locator('[data-testid="stMarkdown"]').filter(has_text="— ").filter(
        has_text=state).first


def progress_steps(page) -> int | None:
    text = page.locator('[data-testid="stProgress"]').first.inner_text(timeout=5000)
    m = re.search(r"step (\d+)/", text)
    return int(m.group(1)) if m else None


def test_live_progress_cancel_and_killed_job(tmp_path, tiny_model_dir):
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.runs.status import read_run

    project = create_demo_project(root=tmp_path / "workspace")
    project.save_normals(idk_normals(10, 4), "seed")
    (project.path / "presets").mkdir()
    (project.path / "presets" / "long.yaml").write_text(yaml.safe_dump({
        "model": str(tiny_model_dir), "method": "sga",
        "method_args": {"r": -0.8, "k": 4, "convention": "label"},
        "training": {"max_steps": 100000, "batch_size": 2, "probe_every": 50,
                     "eval_nll": False, "save_model": False, "lr": 1e-4},
        "eval": {"enabled": False},
    }))
    runs = tmp_path / "runs"
    with streamlit_app(tmp_path) as url, chromium_page() as page:
        run_id = launch_from_train_page(page, url)
        page.goto(url + "/runs")
        page.get_by_text(run_id).first.wait_for()
        seen = set()

        def three_steps_seen() -> bool:  # no clicks: the fragment refreshes
            try:
                step = progress_steps(page)
            except Exception:  # the element is re-rendered between reads
                step = None
            if step is not None:
                seen.add(step)
            return len(seen) >= 3

        # generous: CI machines can be slow to start a job
        wait_for(three_steps_seen, 180,
                 lambda: f"the progress text to change by itself: {seen}", interval=0.4,
                 sleep=lambda s: page.wait_for_timeout(s * 1000))
        page.get_by_role("button", name="Cancel").click()
        live_state(page, "cancelled").wait_for(timeout=60000)
        assert read_run(runs / run_id)["state"] == "cancelled"

        run2 = launch_from_train_page(page, url)
        wait_for(lambda: read_run(runs / run2).get("pid") and
                 (runs / run2 / "metrics.jsonl").exists(), 90, "the second run training",
                 interval=0.3)
        page.goto(url + "/runs")
        page.get_by_text(run2).first.wait_for()
        os.kill(read_run(runs / run2)["pid"], signal.SIGKILL)
        live_state(page, "failed").wait_for(timeout=10000)
        page.screenshot(path=str(tmp_path / "failed.png"))
        # The page derives "failed" at once; the file is written by the runner when it next
        # reaps its launcher (a poll later): wait for that condition, not a fixed time.
        wait_for(lambda: read_run(runs / run2)["state"] == "failed", 60,
                 "the run's status file to say failed", interval=0.3)
