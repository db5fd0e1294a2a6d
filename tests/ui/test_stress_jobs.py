"""Stress tests queued as jobs from the pages (docs/stress-tests.md#queued-as-a-job): the
Runs page's Stress-test writes the request and shows the job queued, then its progress,
stage, ETA and Cancel from its status file, and the error when it failed; the Results
page's "Stress-test runs" queues several runs and says why others were skipped. The
runner's lock is held so that no real runner (and no stress test) starts."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from sga_core.runs.folder import RunFolder
from sga_core.runs.queue import wait_until
from sga_core.runs.status import read_stress, write_stress
from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files
from tests.helpers.stress import runner_lock
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow


def stamp(seconds_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def with_model(run_dir):
    model = RunFolder(run_dir).model_dir
    model.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text("{}")
    return run_dir


def progress_texts(at) -> list[str]:
    return [shown(e.proto.text) for e in at.get("progress")]


def runs_page_on(run_id):
    at = open_page("app_pages/runs.py")
    at.radio(key="runs.filter").set_value("all projects").run()
    at.selectbox(key="runs.select").set_value(run_id).run()
    assert not at.exception, at.exception
    return at


def submit(at, label):
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, at.exception
    return at


def test_a_text_run_is_offered_only_the_attacks_that_take_text(ui_env, demo_dir):
    """A new user's MUSE study found all six attacks preselected for a text run, the three
    QA-only ones (paraphrase, fewshot, roleplay) among them: a text run's form starts with
    the default attacks that take text; the others can still be chosen."""
    from sga_core import workbench as wb
    from sga_core.projects import create_project

    project = create_project("txt", demo_dir / "text_forget.jsonl",
                             demo_dir / "text_retain.jsonl", kind="text",
                             root=ui_env / "workspace")
    runs = ui_env / "runs"
    with_model(fake_run(runs, project, "txt-sga", metrics=metrics()))
    assert wb.default_attacks("text") == ["relearn", "quant4", "quant8"]
    with runner_lock(runs):
        attacks = runs_page_on("txt-sga").multiselect(key="runs.stress_attacks")
        assert attacks.value == ["relearn", "quant4", "quant8"]
        assert {"paraphrase", "fewshot", "roleplay"} <= set(attacks.options)


def test_runs_page_queues_a_stress_test_and_follows_it(ui_env):
    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    runs = ui_env / "runs"
    run = with_model(fake_run(runs, project, "sga-one", metrics=metrics()))
    with runner_lock(runs):
        at = runs_page_on("sga-one")
        attacks = at.multiselect(key="runs.stress_attacks")
        assert attacks.value == ["relearn", "quant4", "quant8", "paraphrase", "fewshot",
                                 "roleplay"]
        assert "benign" in attacks.options
        attacks.set_value([])  # none chosen: said, nothing queued
        submit(at, "Stress-test")
        assert any(w.value == "Choose at least one attack." for w in at.warning)
        assert not RunFolder(run).stress_requested()
        at.multiselect(key="runs.stress_attacks").set_value(["quant8", "paraphrase"])
        assert at.selectbox(key="runs.stress_paraphraser").value == ""  # the data's only
        at.selectbox(key="runs.stress_paraphraser").set_value("local")
        submit(at, "Stress-test")
        assert any("Queued a stress test of sga-one (quant8, paraphrase; paraphrases written "
                   "by the local backend)" in shown(s.value)
                   for s in at.success), [s.value for s in at.success]
        req = RunFolder(run).stress_request()
        assert req["attacks"] == ["quant8", "paraphrase"]
        assert req["settings"] == {"paraphrase_backend": "local"}
        assert any(t.startswith("stress test queued") for t in progress_texts(at))
        # queued: Cancel drops it, and it never starts
        at.button(key="runs.stress_cancel").click().run()
        assert not RunFolder(run).stress_requested()
        assert read_stress(run)["state"] == "cancelled"


def test_the_stress_form_sets_seeds_relearning_steps_and_rate(ui_env):
    # every StressSettings field is offered, folded; only the changed ones are requested,
    # typed as the stress command's flags would type them
    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    run = with_model(fake_run(ui_env / "runs", project, "sga-one", metrics=metrics()))
    with runner_lock(ui_env / "runs"):
        at = runs_page_on("sga-one")
        # each field starts blank, its default shown: nothing untouched is ever sent (a new
        # user's browser sent rouge and quant_symmetric false, both true by default)
        seeds = at.text_input(key="runs.stress_set.seeds")
        assert seeds.value == "" and seeds.placeholder == "default: 0, 1, 2"
        assert at.number_input(key="runs.stress_set.relearn_share").value is None
        rouge = at.selectbox(key="runs.stress_set.rouge")
        assert rouge.value is None and rouge.options[0] == "default (on)"
        assert "runs.stress_set.paraphrase_backend" not in [t.key for t in at.selectbox]
        # a bad value is refused with its name, and nothing is queued
        at.multiselect(key="runs.stress_attacks").set_value(["relearn"])
        at.text_input(key="runs.stress_set.relearn_steps").set_value("0")
        submit(at, "Stress-test")
        assert any("relearn_steps" in shown(e.value) for e in at.error), \
            [e.value for e in at.error]
        assert not RunFolder(run).stress_requested()
        at.text_input(key="runs.stress_set.seeds").set_value("4,5")
        at.text_input(key="runs.stress_set.relearn_steps").set_value("3")
        at.number_input(key="runs.stress_set.relearn_lr").set_value(0.0002)
        at.selectbox(key="runs.stress_set.rouge").set_value(False)
        submit(at, "Stress-test")
        assert any("Queued a stress test of sga-one (relearn; seeds 4, 5; rouge False; "
                   "relearn steps 3; relearn lr 0.0002)" in shown(s.value)
                   for s in at.success), [s.value for s in at.success]
        req = RunFolder(run).stress_request()
        assert req["settings"] == {"seeds": [4, 5], "rouge": False, "relearn_steps": [3],
                                   "relearn_lr": 0.0002}


def test_runs_page_shows_progress_eta_cancel_and_failure(ui_env):
    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    runs = ui_env / "runs"
    run = with_model(fake_run(runs, project, "sga-one", metrics=metrics()))
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                              start_new_session=True)
    try:
        write_stress(run, "running", pid=worker.pid, started_at=stamp(40), done=0, total=4,
                     stage="starting", attacks=["quant8", "relearn"])
        at = runs_page_on("sga-one")
        assert any("stress test, part 1 of 4: starting" in t and "ETA unknown" in t
                   for t in progress_texts(at)), progress_texts(at)
        write_stress(run, done=2, stage="quant8", stage_done=5, stage_total=10)
        at = runs_page_on("sga-one")
        line = next(t for t in progress_texts(at) if t.startswith("stress test"))
        assert "stress test, part 3 of 4: quant8 5/10" in line and "ETA 0m" in line, line
        assert "attacks: quant8, relearn" in line
        assert at.get("progress")[-1].proto.value == 62  # 62.5 % done
        assert "runs.stress_attacks" not in [m.key for m in at.multiselect]  # busy: no form
        at.button(key="runs.stress_cancel").click().run()
        assert not at.exception, at.exception
        assert wait_until(lambda: worker.poll() is not None, 20)
        assert worker.returncode == -15 and read_stress(run)["cancel_requested_at"]
    finally:
        worker.kill()
        worker.wait()
    write_stress(run, "failed", ended_at=stamp(1), error="the stress test exited with "
                                                         "code 1; log tail:\nCUDA error")
    at = runs_page_on("sga-one")
    assert any("stress test failed" in shown(e.value) and "CUDA error" in shown(e.value)
               for e in at.error), [e.value for e in at.error]
    assert "runs.stress_attacks" in [m.key for m in at.multiselect]  # can be asked again


def test_results_form_queues_several_runs_and_reports_skipped(ui_env):
    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    runs = ui_env / "runs"
    fake_run(runs, project, "mine-original", method="finetune", metrics=metrics(fq=0.002))
    from sga_core.projects.training import reference_run_id

    retained = with_model(fake_run(runs, project, reference_run_id(project),
                                   method="finetune", include_forget=False,
                                   metrics=metrics(fq=1.0)))
    a = with_model(fake_run(runs, project, "sga-a", r=-0.8, sweep="s1", metrics=metrics()))
    b = with_model(fake_run(runs, project, "sga-b", r=-0.5, sweep="s1", metrics=metrics()))
    c = fake_run(runs, project, "sga-c", r=-0.2, sweep="s2", metrics=metrics())  # no model
    with runner_lock(runs):
        at = open_page("app_pages/results.py")
        at.selectbox(key="_project_picker").set_value("mine").run()
        assert not at.exception, at.exception
        chosen = at.multiselect(key="results.stress_runs.all runs shown")
        # sga-c has no model; the Retained model is offered (the relearning baseline)
        assert sorted(chosen.value) == sorted(["sga-a", "sga-b", retained.name])
        # the runs by their names on the page; the Original is no run to stress-test
        assert chosen.options == ["Retained", "sga r=-0.8", "sga r=-0.5", "sga r=-0.2"]
        assert any("Not offered" in shown(c.value) and "no saved model" in shown(c.value)
                   for c in at.caption)
        at.selectbox(key="results.stress_sweep").set_value("sweep s2").run()
        assert at.multiselect(key="results.stress_runs.sweep s2").value == []
        at.selectbox(key="results.stress_sweep").set_value("all runs shown").run()
        at.multiselect(key="results.stress_runs.all runs shown").set_value(
            [retained.name, "sga-a", "sga-b", "sga-c"])
        at.multiselect(key="results.stress_attacks").set_value(["quant4", "quant8"])
        submit(at, "Stress-test runs")
        said = [shown(w.value) for w in at.success]
        assert any("Queued 3 stress tests (quant4, quant8); skipped 1." in s for s in said), said
        assert any("skipped" in shown(x.value) and "no saved model" in shown(x.value)
                   for x in at.caption)
    for run in (a, b):
        assert RunFolder(run).stress_request()["attacks"] == ["quant4", "quant8"]
        assert "original" not in RunFolder(run).stress_request()["options"]  # their own
    # the Retained model's recoveries are measured against the Original, not its base model
    assert RunFolder(retained).stress_request()["options"]["original"] == str(
        RunFolder(runs / "mine-original").model_dir)
    assert not RunFolder(c).stress_requested()
