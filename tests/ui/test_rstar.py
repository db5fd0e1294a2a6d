"""AppTest flow for the r* page: run the analysis as a job, see the per-row
result and its summary, queue a sweep over the suggested range; results survive a reload."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.wait import wait_for

APP = str(Path(__file__).resolve().parents[2] / "app.py")
pytestmark = pytest.mark.slow


def test_rstar_page_flow(tmp_path, monkeypatch, tiny_model_dir):
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.runs import queue as jobs
    from sga_core.runs.listing import list_runs

    monkeypatch.setenv("SGA_WORKSPACE", str(tmp_path / "workspace"))
    monkeypatch.setenv("SGA_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.chdir(tmp_path)
    p = create_demo_project(root=tmp_path / "workspace")
    p.save_normals(idk_normals(10, 4), "seed")

    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("app_pages/rstar.py").run()
    at.text_input(key="rstar.model").set_value(str(tiny_model_dir)).run()
    at.button(key="rstar.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]

    def shown():
        at.run()
        assert not at.error, [e.value for e in at.error]
        return any(m.label == "rows" for m in at.metric)

    if not any(m.label == "rows" for m in at.metric):
        wait_for(shown, 120, "r* shown on the page", interval=1)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["rows"] == "10"
    assert int(metrics["r* > 0"]) + int(metrics["r* < 0"]) == 10
    assert (p.path / "rstar" / "result.json").exists()

    at2 = AppTest.from_file(APP, default_timeout=60)  # a reload shows the saved result
    at2.run()
    at2.switch_page("app_pages/rstar.py").run()
    assert {m.label: m.value for m in at2.metric}["rows"] == "10"
    at2.number_input(key="rstar.n").set_value(3).run()
    at2.button(key="rstar.sweep").click().run()
    assert any("Queued 3 runs" in s.value for s in at2.success), [e.value for e in at2.error]
    rows = list_runs(tmp_path / "runs")
    assert len(rows) == 3 and len({r["sweep"] for r in rows}) == 1
    for r in rows:
        jobs.cancel(r["path"])
