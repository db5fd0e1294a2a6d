"""AppTest flows for the Train and Runs pages (docs/decisions/001-run-folder-is-the-contract.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.ui import open_page, shown
from tests.helpers.wait import wait_for

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")

pytestmark = pytest.mark.slow


def fill_tiny_form(at: AppTest, model_dir: Path) -> AppTest:
    at.radio(key="train.model_mode").set_value("other model").run()
    at.text_input(key="train.model").set_value(str(model_dir)).run()
    at.checkbox(key="train.idk_fallback").check().run()
    at.number_input(key="train.f.t.max_steps").set_value(2).run()
    at.number_input(key="train.f.t.batch_size").set_value(4).run()
    at.checkbox(key="train.f.t.eval_nll").uncheck().run()
    at.checkbox(key="train.eval").uncheck().run()
    assert not at.exception, at.exception
    return at


def test_train_form_launch_and_complete(ui_env, tiny_model_dir):
    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    # r slider and number box stay in sync, coefficients follow in words
    at.number_input(key="train.f.m.sga.r.exact").set_value(-2.0).run()
    assert at.slider(key="train.f.m.sga.r.slider").value == -2.0
    assert any("push down x2.50" in i.value for i in at.info)  # K=4: 1 + 2*(3/4)
    at.slider(key="train.f.m.sga.r.slider").set_value(-0.8).run()
    assert at.number_input(key="train.f.m.sga.r.exact").value == -0.8
    assert any("push down x1.60" in i.value and "learn x0.20" in i.value for i in at.info)
    # leave the page and come back: both r widgets still show -0.8 (not their minimum)
    at.switch_page("app_pages/data.py").run()
    at.switch_page("app_pages/train.py").run()
    assert at.slider(key="train.f.m.sga.r.slider").value == -0.8
    assert at.number_input(key="train.f.m.sga.r.exact").value == -0.8
    fill_tiny_form(at, model_dir=tiny_model_dir)

    at.button(key="train.preview").click().run()
    preview = at.code[0].value
    assert preview.startswith("accelerate launch") and "-m sga_core.train" in preview
    at.button(key="train.launch").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    runs = sorted((ui_env / "runs").iterdir())
    runs = [r for r in runs if not r.name.startswith(".")]
    assert len(runs) == 1
    run_dir = runs[0]
    assert (run_dir / "command.sh").read_text().strip().splitlines()[-1] == preview

    at = open_page("app_pages/runs.py")

    def table_completed():
        at.run()
        assert not at.exception, at.exception
        return "completed" in str(at.dataframe[0].value["state"].iloc[0])

    wait_for(table_completed, 120, lambda: f"the run completed in the table: "
                                           f"{at.dataframe[0].value}", interval=1)
    table = at.dataframe[0].value
    assert table["run"].iloc[0] == run_dir.name
    assert any("completed" in m.value for m in at.markdown)


def test_preview_id_is_not_reused_after_a_change(ui_env, tiny_model_dir):
    """Preview at r=-0.8, then set r=0 and launch: the run is named for r=0, not for the
    previewed settings (found in the new-user trial)."""
    from sga_core.config import load_config

    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    at.button(key="train.preview").click().run()
    assert "sga-r-0p8" in at.code[0].value
    at.number_input(key="train.f.m.sga.r.exact").set_value(0.0).run()
    at.button(key="train.launch").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    runs = [r for r in (ui_env / "runs").iterdir() if not r.name.startswith(".")]
    assert len(runs) == 1 and runs[0].name.startswith("sga-r0-")
    assert load_config(runs[0] / "config.yaml").method_args["r"] == 0.0
    from sga_core.runs import queue as jobs

    jobs.cancel(runs[0])


def test_bad_settings_are_shown_not_crashing(ui_env, tiny_model_dir):
    at = open_page("app_pages/train.py")
    at.radio(key="train.model_mode").set_value("other model").run()
    at.text_input(key="train.model").set_value(str(tiny_model_dir)).run()
    # no normal answers and no IDK fallback (the demo starts with it ticked): SGA must
    # refuse with a clear message
    at.checkbox(key="train.idk_fallback").uncheck().run()
    for button in ("train.preview", "train.launch"):
        at.button(key=button).click().run()
        assert not at.exception
        # in the user's words: what is missing and where to get it, not "data.normals"
        said = [shown(e.value) for e in at.error]
        assert len(said) == 1 and "data.normals" not in said[0], said
        assert "SGA trains on normal answers" in said[0] and "not ready (no normal answers " \
               "yet)" in said[0] and "Generate them on the Normal answers page" in said[0]
    at.text_input(key="train.run_id").set_value("Bad ID!").run()
    at.checkbox(key="train.idk_fallback").check().run()
    at.button(key="train.launch").click().run()
    # in words, not a regular expression: a new user's run id with a "." read the pattern
    assert any("run_id" in shown(e.value) and "lowercase letters, digits and '-' only (no "
               "'.'" in shown(e.value) for e in at.error), [e.value for e in at.error]
    assert not [p for p in (ui_env / "runs").glob("*") if not p.name.startswith(".")]


def test_preview_refuses_a_probe_row_that_launch_would_refuse(ui_env, tiny_model_dir):
    """Preview showed a command for probe rows "0, 99" of a 10-row forget set, which Launch
    then refused: Preview says the same, and nothing is written."""
    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    at.text_input(key="train.f.t.probe_rows").set_value("0, 99").run()
    for button in ("train.preview", "train.launch"):
        at.button(key=button).click().run()
        assert not at.exception, at.exception
        said = [shown(e.value) for e in at.error]
        assert len(said) == 1 and "row 99 is not in the forget set, which has 10 rows " \
            "(0 to 9)" in said[0], (button, said)
        assert not at.code, "no command shown for settings Launch refuses"
    assert not [p for p in (ui_env / "runs").glob("*") if not p.name.startswith(".")]


def test_sweep_queues_one_run_per_r(ui_env, tiny_model_dir):
    from sga_core.runs.listing import list_runs

    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    at.text_input(key="train.sweep_values").set_value("-1:0:0.5").run()
    at.button(key="train.sweep").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    rows = list_runs(ui_env / "runs")
    assert sorted(r["r"] for r in rows) == [-1.0, -0.5, 0.0]
    assert len({r["sweep"] for r in rows}) == 1
    for r in rows:  # do not leave the queue busy
        from sga_core.runs import queue as jobs

        jobs.cancel(r["path"])


def test_preset_save_and_load(ui_env, tiny_model_dir):
    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    at.number_input(key="train.f.m.sga.r.exact").set_value(-3.5).run()
    at.text_input(key="train.preset_name").set_value("mine").run()
    at.button(key="train.preset_save").click().run()
    assert any("Saved preset" in s.value for s in at.success)
    preset = ui_env / "workspace" / "demo" / "presets" / "mine.yaml"
    assert "r: -3.5" in preset.read_text()
    at2 = open_page("app_pages/train.py")
    at2.selectbox(key="train.preset_choice").set_value("mine.yaml").run()
    at2.button(key="train.preset_load").click().run()
    assert at2.number_input(key="train.f.t.max_steps").value == 2
    assert at2.number_input(key="train.f.m.sga.r.exact").value == -3.5
    assert at2.text_input(key="train.model").value == str(tiny_model_dir)


def test_run_launched_while_prepare_is_queued_starts_after_it(ui_env, tiny_model_dir):
    """A new user presses Prepare, then launches an SGA run at once: the page offers the
    original being prepared, and the queue runs the SGA run after it, on its model."""
    from sga_core.config import load_config
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.projects.training import original_run_id, submit_prepare
    from sga_core.runs.listing import list_runs
    from sga_core.runs.status import read_run

    project = create_demo_project(root=ui_env / "workspace")
    project.save_normals(idk_normals(len(project.forget()), 4), "idk")
    prep = submit_prepare(project, model=str(tiny_model_dir), root=ui_env / "runs",
                          training={"epochs": 1, "batch_size": 16, "eval_nll": False})
    at = open_page("app_pages/train.py")
    assert at.radio(key="train.model_mode").options == ["prepared original", "other model"]
    at.radio(key="train.model_mode").set_value("prepared original").run()
    original = ui_env / "runs" / original_run_id(project) / "model"
    assert any(str(original) in c.value and "being prepared" in c.value for c in at.caption)
    assert not any("no prepared original" in i.value for i in at.info)
    at.number_input(key="train.f.t.max_steps").set_value(2).run()
    at.checkbox(key="train.eval").uncheck().run()
    at.button(key="train.launch").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    sga = [r for r in list_runs(ui_env / "runs") if r["method"] == "sga"]
    assert len(sga) == 1
    assert load_config(Path(sga[0]["path"]) / "config.yaml").model == str(original)
    st = wait_for(lambda: (v := read_run(Path(sga[0]["path"]))).get("state") in (
        "completed", "failed", "cancelled") and v,
        600, "the run to end", interval=1)  # a prepare and a run on a loaded 2-core machine
    assert st.get("state") == "completed", st
    prepared = read_run(prep[-1])
    assert prepared["state"] == "completed" and prepared["ended_at"] <= st["started_at"]


def test_demo_project_starts_from_the_demo_preset(ui_env):
    import yaml

    preset = yaml.safe_load((ROOT / "assets/presets/demo-sga.yaml").read_text())
    at = open_page("app_pages/train.py")
    assert at.number_input(key="train.f.t.epochs").value == preset["training"]["epochs"]
    assert at.number_input(key="train.f.t.batch_size").value == \
        preset["training"]["batch_size"]
    assert at.number_input(key="train.f.m.sga.r.exact").value == preset["method_args"]["r"]
    assert any("demo-sga.yaml" in c.value for c in at.caption)


def test_a_sweep_of_one_value_says_one_run(ui_env, tiny_model_dir):
    """'Queued 1 runs' read wrong in a trial: one run is singular."""
    from sga_core.runs import queue as jobs
    from sga_core.runs.listing import list_runs

    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    at.text_input(key="train.sweep_values").set_value("-0.5").run()
    at.button(key="train.sweep").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    message = shown(at.success[0].value)
    assert message.startswith("Queued 1 run as sweep"), message
    for r in list_runs(ui_env / "runs"):
        jobs.cancel(r["path"])


def test_launch_after_preview_takes_the_next_id_when_another_launch_took_it(ui_env,
                                                                             tiny_model_dir):
    """Two tabs preview in the same second and get the same run id; the one that launches
    second is queued under the next free id with a note, not refused."""
    from sga_core.config import load_config
    from sga_core.runs import queue as jobs
    from sga_core.runs.create import create_run

    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    at.button(key="train.preview").click().run()
    previewed = at.session_state["train.previewed"][0]
    # the other tab's launch claims the previewed id first
    other = load_config_from_preview(at)
    other.run_id = previewed
    taken = create_run(other, ui_env / "runs", state="cancelled")
    at.button(key="train.launch").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    runs = sorted(r for r in (ui_env / "runs").iterdir() if not r.name.startswith("."))
    assert len(runs) == 2 and taken in runs
    mine = next(r for r in runs if r != taken)
    assert mine.name != previewed
    assert load_config(mine / "config.yaml").run_id == mine.name
    assert any(previewed in i.value and mine.name in i.value for i in at.info)
    jobs.cancel(mine)


def load_config_from_preview(at: AppTest):
    """The config the preview showed (the page's own config.yaml, as another tab makes it)."""
    import yaml

    from sga_core.config import TrainConfig

    return TrainConfig.from_dict(yaml.safe_load(at.session_state["train.previewed"][1]))


def test_a_qa_project_can_limit_the_evaluated_rows(ui_env, tiny_model_dir):
    """``eval.max_rows`` on the Train page of a QA project (the demo) as of a text one: it
    goes into the run's config (here: its preset)."""
    import yaml

    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    at.number_input(key="train.eval_rows").set_value(5).run()
    at.text_input(key="train.preset_name").set_value("few-rows").run()
    at.button(key="train.preset_save").click().run()
    assert not at.exception, at.exception
    preset = yaml.safe_load((ui_env / "workspace" / "demo" / "presets" / "few-rows.yaml")
                            .read_text())
    assert preset["eval"]["max_rows"] == 5


def test_prepare_is_cancelled_as_a_whole(ui_env, tiny_model_dir):
    """A new user cancelled the queued retain reference on the Runs page and the original
    started at once. While Prepare is pending, the Train page cancels both."""
    import subprocess
    import sys

    from sga_core.runs.folder import RunFolder
    from sga_core.runs.status import effective_run, write_run
    from tests.helpers.stress import runner_lock

    with runner_lock(ui_env / "runs"):  # nothing starts: both stay queued
        at = open_page("app_pages/train.py")
        at.radio(key="train.model_mode").set_value("other model").run()
        at.text_input(key="train.model").set_value(str(tiny_model_dir)).run()
        at.number_input(key="train.prep.max_steps").set_value(1).run()
        assert "train.prepare_cancel" not in [b.key for b in at.button]  # nothing pending
        at.button(key="train.prepare").click().run()
        assert not at.exception, at.exception
        runs = [ui_env / "runs" / f"demo-{which}" for which in ("retain-ref", "original")]
        assert [effective_run(r)["state"] for r in runs] == ["queued", "queued"]
        # the original training (a stand-in process): a cancel stops it at its next step
        worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            write_run(runs[1], "running", pid=worker.pid, step=1, total_steps=10)
            at.button(key="train.prepare_cancel").click().run()
            assert not at.exception, at.exception
            # said at once, not offered again (a new user saw nothing change for 40 s)
            assert "train.prepare_cancel" not in [b.key for b in at.button]
            assert any("Cancelling Prepare: demo-retain-ref and demo-original" in shown(i.value)
                       for i in at.info), [i.value for i in at.info]
        finally:
            worker.kill()
        for run_dir in runs:
            assert RunFolder(run_dir).cancel_requested() or \
                effective_run(run_dir)["state"] == "cancelled", run_dir.name


def test_the_row_limit_says_what_each_set_will_be_read_of(ui_env):
    """A new user's MUSE-Books evaluation scored all 3,547 holdout chunks on a CPU: nothing
    said so before Launch. Beside the limit, each set's rows as they will be read (the demo
    protocol's 40 retain rows), and when a large set is read whole, that it is slow."""
    from ui.protocol import rows_caption

    at = open_page("app_pages/train.py")  # the demo: 10 forget and 110 retain rows

    def said() -> str:
        return next(shown(c.value) for c in at.caption
                    if shown(c.value).startswith("The evaluation reads"))

    assert said().startswith("The evaluation reads forget: 10 rows, retain: 40 of 110 rows")
    at.number_input(key="train.eval_rows").set_value(5).run()
    assert said().startswith("The evaluation reads forget: 5 of 10 rows, retain: 5 of 110 "
                             "rows")
    big = rows_caption({"forget": 119, "holdout": 3547}, 0)
    assert "Every row of holdout (3,547) is scored: on a CPU that can take hours" in big
    assert "hours" not in rows_caption({"forget": 119, "holdout": 3547}, 200)


def test_the_nll_before_and_after_is_bounded_and_its_bound_is_in_view(ui_env, tiny_model_dir):
    """"eval nll" scored every forget and retain row before step 1 (2,174 rows of a
    MUSE-Books import: an hour on a CPU) and its bound hid among the advanced fields: it
    now sits beside the box, at Prepare's 200 rows, and goes into the run's config."""
    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    at.checkbox(key="train.f.t.eval_nll").check().run()
    box = at.number_input(key="train.f.t.nll_rows")  # the main fields, not the advanced
    assert box.value == 200 and box.label == "NLL rows per set"
    box.set_value(30).run()
    at.button(key="train.preview").click().run()
    assert not at.exception, at.exception
    cfg = load_config_from_preview(at)
    assert cfg.training.eval_nll and cfg.training.nll_rows == 30


def test_prepare_says_its_steps_and_evaluates_at_most_the_pages_rows(ui_env, tiny_model_dir):
    """The Prepare panel says how many steps Prepare runs before it is pressed, and both
    prepare runs take the page's "evaluate at most" row limit and the NLL sample's size (a
    MUSE project's Prepare evaluated every retain and holdout row on a CPU)."""
    from sga_core.config import load_config
    from sga_core.runs import queue as jobs

    at = open_page("app_pages/train.py")  # the demo: 10 forget and 110 retain rows

    def plan() -> str:
        return next(c.value for c in at.caption if "Prepare runs" in c.value)

    # QA defaults, batch 8 and 4 epochs: 4 x 14 steps (retain), 4 x 15 (forget + retain)
    assert "116 training steps: 56 for the retain reference, then 60 for the original" \
        in plan() and "every row of each set" in plan()
    at.number_input(key="train.prep.batch_size").set_value(4).run()
    assert "232 training steps" in plan()
    at.number_input(key="train.eval_rows").set_value(5).run()
    assert "at most 5 rows of each set" in plan()
    at.radio(key="train.model_mode").set_value("other model").run()
    at.text_input(key="train.model").set_value(str(tiny_model_dir)).run()
    at.number_input(key="train.prep.max_steps").set_value(1).run()
    assert "2 training steps" in plan()
    at.number_input(key="train.prep.nll_rows").set_value(3).run()
    at.button(key="train.prepare").click().run()
    runs = [ui_env / "runs" / f"demo-{which}" for which in ("original", "retain-ref")]
    try:
        assert not at.exception and not at.error, at.exception or [e.value for e in at.error]
        for run_dir in runs:
            cfg = load_config(run_dir / "config.yaml")
            assert cfg.eval.max_rows == 5
            assert cfg.training.eval_nll and cfg.training.nll_rows == 3
    finally:
        for run_dir in runs:
            if run_dir.exists():
                jobs.cancel(run_dir)


def test_a_missing_model_folder_is_refused_at_launch(ui_env, tiny_model_dir, tmp_path):
    """'other model' naming a folder that does not exist: Launch says so and queues
    nothing (it used to queue a run that failed later on the Runs page with ModelError)."""
    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    gone = tmp_path / "no-such-model"
    at.text_input(key="train.model").set_value(str(gone)).run()
    at.button(key="train.launch").click().run()
    assert not at.exception, at.exception
    assert any(f"model: the folder {gone} does not exist" in shown(e.value) for e in at.error), \
        [e.value for e in at.error]
    runs = ui_env / "runs"
    assert not runs.exists() or not [p for p in runs.iterdir() if not p.name.startswith(".")]
