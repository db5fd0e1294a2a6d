"""MUSE's sustainability study on the real one-node SLURM cluster (tests/helpers/slurm.py):
``sustain --backend slurm`` sends one job per request, request 2's held by SLURM until
request 1's job ended well, and request 2 trains from request 1's model."""

from __future__ import annotations

import json

import pytest

from sga_core.runs import status as run_status
from sga_core.runs.slurm.client import TABLE
from sga_core.runs.slurm.profile import ClusterProfile, save_profile
from tests.e2e.test_muse_study import distance, two_request_study, weights
from tests.helpers.muse_files import sust_fold
from tests.helpers.slurm import wait_for

pytestmark = pytest.mark.slow


def test_a_sustainability_study_on_slurm_chains_its_jobs(slurm, tmp_path, tiny_model_dir,
                                                         monkeypatch):
    monkeypatch.setenv("SGA_SLURM_TTL", "1")
    TABLE.ttl = 1.0
    ws, runs = tmp_path / "ws", tmp_path / "runs"
    monkeypatch.setenv("SGA_WORKSPACE", str(ws))
    save_profile(ClusterProfile(cpus=1, time_limit="15", max_jobs=2), ws)
    r1, r2 = two_request_study(ws, runs, tmp_path, tiny_model_dir, "slurm")
    jobs = [run_status.read_run(r.path).get("slurm_job_id") for r in (r1, r2)]
    assert all(jobs), jobs  # each request is a SLURM job of its own

    def ended(run):
        view = run_status.run_view(run.path)
        return view["state"] in ("completed", "failed", "cancelled") and \
            view.get("eval_state") in ("completed", "failed") and view

    for run in (r1, r2):
        view = wait_for(lambda run=run: ended(run), 600,
                        lambda run=run: f"{run.path.name} trained and evaluated on SLURM "
                                        f"(now {run_status.run_view(run.path)})", interval=2.0)
        assert (view["state"], view["eval_state"]) == ("completed", "completed"), view
    for run, k in ((r1, 1), (r2, 2)):
        rows = (run.data_dir / "forget.jsonl").read_text().splitlines()
        assert [json.loads(x)["text"] for x in rows] == sust_fold(k)
    # request 2 was held until request 1 ended, and trained from its model
    st1, st2 = run_status.read_run(r1.path), run_status.read_run(r2.path)
    assert st2["started_at"] >= st1["ended_at"], (st1, st2)
    assert r2.config().model == str(r1.model_dir)
    w0, w1, w2 = weights(tiny_model_dir), weights(r1.model_dir), weights(r2.model_dir)
    assert distance(w2, w1) < distance(w2, w0), "request 2 did not start from request 1"
