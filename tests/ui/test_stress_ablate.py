"""The directional ablation attack on the Runs page's Stress-test form (read from the
registry, docs/stress-tests.md#directional-ablation): offered, not preselected (it loads the
Original a second time), its settings among the folded attack settings; the request it
writes becomes the runner's command with the attack's flags. The runner's lock is held so
that no stress test starts."""

from __future__ import annotations

import pytest

from sga_core.runs import launch
from sga_core.runs.folder import RunFolder
from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files
from tests.helpers.stress import runner_lock
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow


def test_the_runs_page_queues_an_ablation_with_its_settings(ui_env):
    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    run = fake_run(ui_env / "runs", project, "sga-one", metrics=metrics())
    model = RunFolder(run).model_dir
    model.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text("{}")
    with runner_lock(ui_env / "runs"):
        at = open_page("app_pages/runs.py")
        at.radio(key="runs.filter").set_value("all projects").run()
        at.selectbox(key="runs.select").set_value("sga-one").run()
        attacks = at.multiselect(key="runs.stress_attacks")
        assert "ablate" in attacks.options and "ablate" not in attacks.value
        split = at.selectbox(key="runs.stress_set.ablate_split")
        assert split.value is None and split.options == ["default (half)", "half", "loo"]
        assert at.text_input(key="runs.stress_set.ablate_layers").placeholder == \
            "default: none"
        attacks.set_value(["ablate"])
        split.set_value("loo")
        at.text_input(key="runs.stress_set.ablate_layers").set_value("3, 5")
        next(b for b in at.button if b.label == "Stress-test").click().run()
        assert not at.exception, at.exception
        assert any("Queued a stress test of sga-one (ablate;" in shown(s.value)
                   for s in at.success), [s.value for s in at.success]
    req = RunFolder(run).stress_request()
    assert req["attacks"] == ["ablate"]
    assert req["settings"] == {"ablate_layers": [3, 5], "ablate_split": "loo"}
    argv = launch.stress_argv(run, req["attacks"], req["settings"], req["options"])
    assert argv[argv.index("--attacks") + 1] == "ablate"
    assert argv[argv.index("--ablate-layers") + 1] == "3,5"
    assert argv[argv.index("--ablate-split") + 1] == "loo"
