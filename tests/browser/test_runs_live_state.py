"""Real browser: the Runs page follows a run from training into its evaluation with no
reload. The runner writes "completed" when training ends and starts the evaluation a poll
later; the page used to decide in that gap that nothing was active any more and stopped
refreshing, so the detail said "completed" with no evaluation progress (and the picker kept
an older label) until a reload. Now the table, the picker's label and the detail are drawn
from one read of the runs per refresh, and a completed run that the runner is about to
evaluate keeps the page refreshing."""

from __future__ import annotations

import fcntl
import subprocess

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import chromium_page, needs_browser, streamlit_app, wait_idle
from tests.helpers.own_data import own_project, tofu_files

pytestmark = [pytest.mark.slow, pytest.mark.browser, needs_browser]


def evaluated_run(runs, project, run_id: str):
    """A run folder whose config asks for an evaluation, as the Train page queues it."""
    from sga_core.normals.idk import idk_normals
    from sga_core.projects.training import build_config
    from sga_core.runs.create import create_run

    normals = project.path / "idk.jsonl"
    idk_normals(len(project.forget()), 4).save(normals)
    cfg = build_config(project, method="sga", method_args={"r": -0.8, "k": 4},
                       training={"max_steps": 20}, launch={}, model="embedded:smollm2",
                       run_id=run_id, sweep=None, normals=str(normals),
                       eval_cfg={"enabled": True})
    return create_run(cfg, runs, state="queued", mode="queue")


def test_detail_picker_and_table_follow_a_run_into_its_evaluation(tmp_path):
    from sga_core.runs.queue import RUNNER_LOCK
    from sga_core.runs.status import write_eval, write_run

    project = own_project(tmp_path / "workspace", tofu_files(tmp_path / "files"))
    runs = tmp_path / "runs"
    run = evaluated_run(runs, project, "live-run")
    # the "trainer" and "evaluator" below: a live process of this host, in its own group
    # (the app's teardown kills the process groups of a run's pids)
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
    me = proc.pid
    write_run(run, "running", pid=me, launcher_pid=me, started_at="2026-11-24T04:00:00Z",
              step=5, total_steps=20)
    lock = open(runs / RUNNER_LOCK, "a")  # a live runner holds the queue lock
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with streamlit_app(tmp_path) as url, chromium_page() as page:
            page.goto(f"{url}/runs?project=mine")
            picker = page.locator('[data-testid="stSelectbox"]').filter(has_text="run").first
            picker.wait_for(timeout=60000)
            wait_idle(page)
            expect(picker.get_by_role("combobox")).to_have_value("live-run — running")
            page.get_by_text("step 5/20 · elapsed").wait_for(timeout=60000)

            # training ends; the model is saved; the runner has not started the evaluation
            (run / "model").mkdir()
            (run / "model" / "config.json").write_text("{}")
            write_run(run, "completed", step=20, ended_at="2026-11-24T04:01:00Z")
            page.get_by_text("step 20/20 · elapsed").wait_for(timeout=60000)
            expect(picker.get_by_role("combobox")).to_have_value("live-run — completed",
                                                                 timeout=60000)

            # a poll later the runner starts the evaluation (the evaluator's own writer)
            write_eval(run, "running", pid=me, started_at="2026-11-24T04:01:05Z",
                       stage="verbatim continuations", done=0, total=20)
            detail = page.get_by_text("evaluating: verbatim continuations 0/20 · elapsed")
            detail.wait_for(timeout=60000)
            table = page.locator('[data-testid="stDataFrame"]')
            expect(table).to_contain_text("completed · evaluating", timeout=60000)
            expect(picker.get_by_role("combobox")).to_have_value(
                "live-run — completed · evaluating", timeout=60000)
            write_eval(run, stage="verbatim continuations", done=7, total=20)
            page.get_by_text("evaluating: verbatim continuations 7/20 · elapsed").wait_for(
                timeout=60000)  # the detail (the table's cell has no " · elapsed")
            page.screenshot(path=str(tmp_path / "evaluating.png"), full_page=True)
    finally:
        lock.close()
        proc.kill()
        proc.wait()
