"""SLURM from the browser (AppTest) against the real one-node cluster of the
``slurm_cluster`` fixture: Train's backend choice and batch-script preview, a launch that
completes as a SLURM job, the Runs page's job/node/wait line, and the cluster profile form
(docs/slurm.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sga_core.runs import status as run_status
from sga_core.runs.folder import SLURM_SCRIPT, RunFolder
from sga_core.runs.slurm.profile import ClusterProfile, load_profile, save_profile
from tests.helpers.ui import open_page, results_cells, shown
from tests.helpers.wait import wait_for
from tests.ui.test_train import fill_tiny_form

pytestmark = pytest.mark.slow


def test_train_page_sends_a_run_to_slurm_and_runs_shows_its_job(slurm, ui_env,
                                                               tiny_model_dir):
    save_profile(ClusterProfile(cpus=1, time_limit="15"), ui_env / "workspace")
    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    at.checkbox(key="train.eval").check().run()  # evaluated in the job, as a local run is
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
    def ended():
        at.run()
        assert not at.exception, at.exception
        return "completed" in str(at.dataframe[0].value["state"].iloc[0]) and \
            run_status.read_eval(run_dir).get("state") in ("completed", "failed")

    wait_for(ended, 600, "the run completed and evaluated", interval=2)
    at.run()
    captions = " ".join(c.value for c in at.caption)
    assert "completed" in str(at.dataframe[0].value["state"].iloc[0])
    assert run_status.read_eval(run_dir).get("state") == "completed"
    assert RunFolder(run_dir).summary().get("metrics")  # evaluated: a summary with metrics
    cells = results_cells(open_page("app_pages/results.py"))  # as a local run is shown
    (row,) = [name for name in cells if name not in ("Original", "Retained")]
    assert cells[row]["forget ROUGE-L"][0] not in ("", "—")
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


def test_train_pages_prepare_goes_to_slurm_when_the_page_runs_on_slurm(slurm, ui_env,
                                                                      tiny_model_dir):
    """With "run on: SLURM", Prepare sends both fine-tunings to SLURM, the original's job
    held until the reference's ended well (docs/slurm.md#prepare)."""
    from sga_core.projects import create_demo_project
    from tests.helpers.own_data import own_project, tofu_files
    from tests.ui.test_own_data import on_page

    create_demo_project(root=ui_env / "workspace")
    own_project(ui_env / "workspace", tofu_files(ui_env / "files"))  # project "mine"
    save_profile(ClusterProfile(cpus=1, time_limit="15"), ui_env / "workspace")
    at = on_page("app_pages/train.py", "mine")
    at.radio(key="train.backend").set_value("slurm").run()
    at.radio(key="train.model_mode").set_value("other model").run()
    at.text_input(key="train.model").set_value(str(tiny_model_dir)).run()
    at.number_input(key="train.prep.max_steps").set_value(1).run()
    at.button(key="train.prepare").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert [s.value for s in at.success if "Prepare queued" in s.value]
    ids = {}
    for run_id in ("mine-retain-ref", "mine-original"):
        run_dir = ui_env / "runs" / run_id
        assert (run_dir / SLURM_SCRIPT).exists()
        ids[run_id] = run_status.read_run(run_dir)["slurm_job_id"]
    assert set(ids.values()) <= {j["id"] for j in slurm.jobs()}
    deps = slurm.run("squeue", "-h", "-j", ids["mine-original"], "-o", "%E").strip()
    assert deps.startswith(f"afterok:{ids['mine-retain-ref']}"), deps


def test_choose_r_queues_its_sweep_as_one_slurm_job_array(slurm, ui_env, tiny_model_dir):
    """Choose r's "Queue sweep" with "run on: SLURM": the sweep's runs are one job array."""
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project, rstar_job
    from sga_core.runs.folder import SLURM_ARRAY_SCRIPT
    from sga_core.runs.listing import list_runs

    save_profile(ClusterProfile(cpus=1, time_limit="15", max_jobs=2), ui_env / "workspace")
    project = create_demo_project(root=ui_env / "workspace")
    project.save_normals(idk_normals(10, 4), "seed")
    rstar_job.analyse(project, {"model": str(tiny_model_dir), "k": 4, "convention": "label",
                                "subset": "all", "last_n_layers": 0,
                                "normals": str(project.normals_path)})  # what the job saves
    at = open_page("app_pages/rstar.py")
    at.number_input(key="rstar.n").set_value(3).run()
    at.radio(key="rstar.backend").set_value("slurm").run()
    at.button(key="rstar.sweep").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Queued 3 runs" in s.value for s in at.success)
    rows = list_runs(ui_env / "runs")
    assert len(rows) == 3 and len({r["sweep"] for r in rows}) == 1
    ids = sorted(run_status.read_run(r["path"])["slurm_job_id"] for r in rows)
    array = ids[0].split("_")[0]
    assert ids == [f"{array}_{i}" for i in range(3)]  # one array, task per run
    (script,) = [Path(r["path"]) / SLURM_ARRAY_SCRIPT for r in rows
                 if (Path(r["path"]) / SLURM_ARRAY_SCRIPT).exists()]
    assert "#SBATCH --array=0-2%2" in script.read_text()


def test_the_data_page_sends_the_published_models_evaluations_to_slurm(slurm, ui_env,
                                                                       tiny_model_dir):
    """Where SLURM is offered, the Data page's 'Evaluate the published models' has the
    same 'run on' choice as Train: with SLURM chosen each evaluation is a SLURM job."""
    import shutil

    from sga_core.assets import DEMO_DIR
    from sga_core.projects import create_project
    from sga_core.projects.published import set_published

    save_profile(ClusterProfile(cpus=1, time_limit="15"), ui_env / "workspace")
    project = create_project("pub", DEMO_DIR / "forget.jsonl", DEMO_DIR / "retain.jsonl",
                             root=ui_env / "workspace")
    set_published(project, original=str(tiny_model_dir),
                  retained=str(shutil.copytree(tiny_model_dir, ui_env / "retained")))
    at = open_page("app_pages/data.py", "pub")
    at.radio(key="data.published_backend").set_value("slurm").run()
    at.button(key="data.published_eval").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    for role in ("retained", "original"):
        ev = run_status.read_eval(ui_env / "runs" / f"pub-published-{role}")
        assert ev["slurm_job_id"] and ev["state"] in ("queued", "running", "completed"), ev
