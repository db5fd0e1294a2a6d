"""The published models' evaluations on a real SLURM (slurm-wlm + munge, the
``slurm_cluster`` fixture; docs/guide/published-models.md#their-rows-in-results): from the
shell, ``project evaluate-published NAME --backend slurm`` sends each evaluation to the
cluster as a job of its own, the Original's held until the Retained's ended well; both
complete and are the Results table's Original and Retained rows."""

from __future__ import annotations

import shutil

import pytest

from sga_core.projects import create_project
from sga_core.projects.published import set_published
from sga_core.report.table import results_table
from sga_core.runs import status as run_status
from sga_core.runs.folder import SLURM_EVAL_SCRIPT
from tests.e2e.test_slurm_runs import make_setup
from tests.helpers.cli import sga_cli
from tests.helpers.slurm import wait_for

pytestmark = pytest.mark.slow


def test_published_models_are_evaluated_as_slurm_jobs_the_retained_first(
        slurm, tmp_path, tiny_model_dir, monkeypatch):
    setup = make_setup(tmp_path, tiny_model_dir, monkeypatch)  # profile, data, fast ttl
    ws, runs, data = setup["ws"], setup["runs"], tmp_path / "data"
    project = create_project("pub", data / "forget.jsonl", data / "retain.jsonl", root=ws)
    retained = shutil.copytree(tiny_model_dir, tmp_path / "retained")
    set_published(project, original=str(tiny_model_dir), retained=str(retained))
    env = {"SGA_RUNS_DIR": str(runs), "SGA_WORKSPACE": str(ws)}
    out = sga_cli("project", "evaluate-published", "pub", "--workspace", str(ws),
                  "--backend", "slurm", "--max-rows", "2", env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "queued the evaluation of pub-published-retained" in out.stdout
    assert "as SLURM job" in out.stdout, out.stdout
    ret, orig = runs / "pub-published-retained", runs / "pub-published-original"
    jobs = {d: run_status.read_eval(d).get("slurm_job_id") for d in (ret, orig)}
    assert all(jobs.values()) and jobs[ret] != jobs[orig], jobs
    assert "python -m sga_core eval" in (orig / SLURM_EVAL_SCRIPT).read_text()
    assert not (orig / "EVAL_REQUESTED").exists()  # nothing left for a local runner

    def ended(d):
        ev = run_status.effective_eval(d)
        return ev["state"] in run_status.FINAL_STATES and ev

    done = {d: wait_for(lambda d=d: ended(d), 600, f"{d.name}'s evaluation job",
                        interval=2.0) for d in (ret, orig)}
    assert [done[d]["state"] for d in (ret, orig)] == ["completed", "completed"], done
    # SLURM held the Original's evaluation until the Retained's had ended
    assert done[orig]["started_at"] >= done[ret]["ended_at"], done
    rows = {r["run"]: r for r in results_table(project, runs)}
    assert rows["Original"]["run_id"] == orig.name and rows["Retained"]["run_id"] == ret.name
