"""One rule for which runs may be stress-tested, on every surface: the Runs page's
Stress-test, like Results' "Stress-test runs" and ``stress --queue``, refuses a run that is
not evaluated yet (Results lists evaluated runs only, so its result would never show)."""

from __future__ import annotations

import pytest

from sga_core.runs.folder import RunFolder
from tests.helpers.own_data import fake_run, own_project, tofu_files
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow


def test_the_runs_page_refuses_a_run_that_is_not_evaluated(ui_env):
    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    run = fake_run(ui_env / "runs", project, "sga-unevaluated")  # completed, no evaluation
    (RunFolder(run).model_dir).mkdir(parents=True)
    (RunFolder(run).model_dir / "config.json").write_text("{}")
    at = open_page("app_pages/runs.py")
    at.radio(key="runs.filter").set_value("all projects").run()
    at.selectbox(key="runs.select").set_value("sga-unevaluated").run()
    assert not at.exception, at.exception
    said = [shown(c.value) for c in at.caption]
    assert any("cannot stress-test this run: it is not evaluated yet" in c for c in said), said
    assert not [b for b in at.button if b.label == "Stress-test"]
