"""SLURM from the browser (AppTest) against the real one-node cluster of the
``slurm_cluster`` fixture: Train's backend choice and batch-script preview, a launch that
completes as a SLURM job, the Runs page's job/node/wait line, and the cluster profile form
(docs/slurm.md)."""

from __future__ import annotations

import time

import pytest

from sga_core.runs import status as run_status
from sga_core.runs.folder import SLURM_SCRIPT
from sga_core.runs.slurm.profile import ClusterProfile, load_profile, save_profile
from tests.helpers.ui import open_page, shown
from tests.ui.test_train import fill_tiny_form

pytestmark = pytest.mark.slow


def test_train_page_sends_a_run_to_slurm_and_runs_shows_its_job(slurm, ui_env,
                                                               tiny_model_dir):
    save_profile(ClusterProfile(cpus=1, time_limit="15"), ui_env / "workspace")
    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    at.radio(key="train.backend").set_value("slurm").run()
    at.button(key="train.preview").click().run()
    assert not at.exception, at.exception
    script = at.code[1].value
    assert "#SBATCH --cpus-per-task=1" in script and "#SBATCH --time=15" in script
    at.button(key="train.launch").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (run_dir,) = [r for r in (ui_env / "runs").iterdir() if not r.name.startswith(".")]
    assert (run_dir / SLURM_SCRIPT).read_text().rstrip() == script.rstrip()  # as previewed
    assert run_status.read_run(run_dir)["slurm_job_id"]

    at = open_page("app_pages/runs.py")
    deadline = time.time() + 600
    while time.time() < deadline:
        at.run()
        assert not at.exception, at.exception
        if "completed" in str(at.dataframe[0].value["state"].iloc[0]):
            break
        time.sleep(2)
    at.run()
    captions = " ".join(c.value for c in at.caption)
    assert "completed" in str(at.dataframe[0].value["state"].iloc[0])
    assert f"SLURM job {run_status.read_run(run_dir)['slurm_job_id']}" in captions
    assert f"node {slurm.node}" in captions and "waited" in captions


def test_cluster_profile_form_saves_and_refuses_bad_values(ui_env):
    at = open_page("app_pages/runs.py")
    at.text_input(key="cluster.f.partition").set_value("gpu").run()
    at.text_area(key="cluster.f.setup").set_value("module load cuda\nsource v/bin/activate")
    at.button(key="cluster.save").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    saved = load_profile(ui_env / "workspace")
    assert saved.partition == "gpu"
    assert saved.setup == ["module load cuda", "source v/bin/activate"]
    at.text_input(key="cluster.f.time_limit").set_value("two hours").run()
    at.button(key="cluster.save").click().run()
    assert any("time_limit" in shown(e.value) for e in at.error), [e.value for e in at.error]
    assert load_profile(ui_env / "workspace").time_limit == "4:00:00"  # nothing written
