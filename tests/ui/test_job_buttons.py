"""The pages' job buttons: Results offers no evaluation that can only
fail (a removed evaluation set) and says why; the Runs page re-runs the project's Retained
model in place after a confirmation, and shows a cancelled run as "cancelling" until it has
stopped. Stand-in run folders and processes, no model."""

from __future__ import annotations

import signal
import sys

import pytest
import yaml

from sga_core import workbench as wb
from sga_core.runs import procs, queue
from sga_core.runs.folder import RunFolder
from sga_core.runs.status import read_run, write_run
from tests.helpers.jobs import stand_in_model
from tests.helpers.ui import open_page, shown


@pytest.fixture()
def demo(ui_env, monkeypatch):
    """The demo project, and no runner started by the pages (nothing may train here)."""
    from sga_core.projects import create_demo_project

    monkeypatch.setattr(queue, "ensure_runner", lambda root=None, **kw: None)
    monkeypatch.setattr(wb, "ensure_runner", lambda root=None, **kw: None)
    return create_demo_project(root=ui_env / "workspace")


def completed_run(ui_env, project, run_id: str, notes: str = "", method: str = "finetune"):
    """A completed, unevaluated run of the project with a stand-in model."""
    from sga_core.projects.training import build_config, default_eval
    from sga_core.runs.create import create_run

    cfg = build_config(project, method=method, method_args={"include_forget": False},
                       training={"max_steps": 1}, launch={}, model=stand_in_model(ui_env),
                       run_id=run_id, notes=notes,
                       eval_cfg={**default_eval(project, ui_env / "runs"),
                                 "reference": str(ui_env / "runs" / "demo-retain-ref")})
    run = create_run(cfg, ui_env / "runs")
    RunFolder(run).model_dir.mkdir()
    (RunFolder(run).model_dir / "config.json").write_text("{}")
    write_run(run, "completed")
    return run


def test_results_offers_no_evaluation_that_would_fail(ui_env, demo):
    snap = completed_run(ui_env, demo, "finetune-new")
    old = completed_run(ui_env, demo, "finetune-old")
    # made before sets were snapshotted: its config names the project's file
    cfg = yaml.safe_load(RunFolder(old).config_path.read_text())
    cfg["eval"]["sets"] = {name: str(path) for name, path in demo.eval_sets().items()}
    RunFolder(old).config_path.write_text(yaml.safe_dump(cfg))
    demo.remove_eval_set("world_facts")
    at = open_page("app_pages/results.py")
    warnings = " ".join(shown(w.value) for w in at.warning)
    assert "finetune-old cannot be evaluated: its evaluation set world_facts" in warnings
    assert "finetune-new" not in warnings
    captions = " ".join(c.value for c in at.caption)
    assert "Not evaluated yet: finetune-new" in captions and "finetune-old" not in captions
    at.button(key="results.eval").click().run()
    assert not at.exception
    assert RunFolder(snap).eval_requested() and not RunFolder(old).eval_requested()


def test_the_retained_model_is_re_run_in_place_after_a_confirmation(ui_env, demo):
    ref = completed_run(ui_env, demo, "demo-retain-ref", notes="prepare: retain reference")
    at = open_page("app_pages/runs.py")
    at.selectbox(key="runs.select").set_value("demo-retain-ref").run()
    assert at.button(key="runs.rerun").disabled  # not before "replace the Retained model"
    at.checkbox(key="runs.confirm_rerun.demo-retain-ref").check().run()
    at.button(key="runs.rerun").click().run()
    assert not at.exception
    assert read_run(ref)["state"] == "queued"
    runs = sorted(p.name for p in (ui_env / "runs").iterdir() if not p.name.startswith("."))
    assert runs == ["demo-retain-ref"]  # no finetune-<time> beside it
    assert any("in place of the Retained model" in shown(s.value) for s in at.success)


def test_a_cancelled_run_reads_cancelling_until_it_stopped(ui_env, demo):
    run = completed_run(ui_env, demo, "finetune-long")
    proc = procs.spawn([sys.executable, "-c",
                        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
                        " time.sleep(120)"], ui_env / "t.log", nice=0)
    try:
        write_run(run, "running", pid=proc.pid, pid_start=proc.sga_record["start"],
                  launcher_pid=None, step=1, total_steps=100)
        at = open_page("app_pages/runs.py")
        at.selectbox(key="runs.select").set_value("finetune-long").run()
        at.button(key="runs.cancel").click().run()
        assert not at.exception
        at.run()  # the page's next refresh (it refreshes itself each second)
        table = at.dataframe[0].value.set_index("run")
        assert table.loc["finetune-long", "state"] == "cancelling"
        procs.kill_group(proc, signal.SIGKILL)
        proc.wait(timeout=10)
        at.run()
        table = at.dataframe[0].value.set_index("run")
        assert table.loc["finetune-long", "state"] == "cancelled"  # at once, not "failed"
    finally:
        procs.kill_group(proc, signal.SIGKILL)
