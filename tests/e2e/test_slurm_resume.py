"""Resume follows the run's backend (docs/slurm.md#resuming-a-run): a SLURM run killed after
a checkpoint and resumed through what the Runs page calls (``sga_core.workbench.resume``)
is a new SLURM job, with the profile it was submitted with, and ends as the same run as one
never interrupted; a resume that cannot go to SLURM (no checkpoint, SLURM not offered here,
sbatch refusing it) changes nothing and never runs the training on this machine instead.
On the real one-node cluster of tests/helpers/slurm.py; a local run's resume is
tests/e2e/test_resume.py's."""

from __future__ import annotations

import fcntl
import os
import signal
from pathlib import Path

import pytest

from sga_core import workbench as wb
from sga_core.config import TrainConfig
from sga_core.runs import checkpoints as ckpts
from sga_core.runs import status as run_status
from sga_core.runs.create import create_run
from sga_core.runs.folder import SLURM_LOG, SLURM_SCRIPT, RunFolder
from sga_core.runs.queue import RUNNER_LOCK
from sga_core.runs.slurm import backend
from sga_core.runs.slurm.client import TABLE, SlurmError
from sga_core.runs.slurm.profile import ClusterProfile, save_profile
from sga_core.runs.slurm.script import run_script
from tests.e2e.test_resume import STEPS, TOLERANCE, losses, make_cfg, max_diff, weights
from tests.helpers.cli import sga_cli
from tests.helpers.resume import idk_normals, snapshot, write_checkpoint
from tests.helpers.slurm import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture()
def ws(tmp_path, monkeypatch) -> Path:
    """The workspace the pages serve, with a profile that fits the one-node cluster."""
    monkeypatch.setenv("SGA_SLURM_TTL", "1")
    monkeypatch.setattr(TABLE, "ttl", 1.0)
    ws = tmp_path / "ws"
    monkeypatch.setenv("SGA_WORKSPACE", str(ws))
    save_profile(ClusterProfile(cpus=1, time_limit="15"), ws)
    return ws


def ended(run_dir: Path, timeout: float = 600) -> dict:
    return wait_for(lambda: (v := run_status.effective_run(run_dir))["state"]
                    in run_status.FINAL_STATES and v, timeout,
                    f"{run_dir.name} to end", interval=1.0)


def test_a_slurm_run_killed_after_a_checkpoint_resumes_as_a_new_slurm_job(
        slurm, ws, tmp_path, tiny_model_dir, demo_dir, runs_dir):
    normals = idk_normals(tmp_path / "normals.jsonl", demo_dir)
    (whole,) = backend.submit([make_cfg(tiny_model_dir, demo_dir, normals, "sga", "whole")],
                            runs_dir)
    cut = make_cfg(tiny_model_dir, demo_dir, normals, "sga", "killed", save_every=10)
    cut.eval.enabled, cut.eval.in_process = True, False  # evaluated by a job of its own
    cut.eval.max_new_tokens, cut.eval.max_retain_rows = 2, 4
    (run_dir,) = backend.submit([cut], runs_dir)
    old_job = run_status.read_run(run_dir)["slurm_job_id"]
    old_eval = run_status.read_eval(run_dir)["slurm_job_id"]
    wait_for(lambda: ckpts.latest(run_dir), 600, "the checkpoint at step 10", interval=0.1)
    os.kill(run_status.read_run(run_dir)["pid"], signal.SIGKILL)  # the trainer, in its job
    st = ended(run_dir)
    assert st["state"] == "failed" and st["slurm_job_id"] == old_job, st
    assert ckpts.latest(run_dir)[0] == 10

    # the workspace's profile changed since: the run keeps the one it was submitted with
    save_profile(ClusterProfile(cpus=1, time_limit="15", partition="nope"), ws)
    st = wb.resume(run_dir, runs_dir)
    new_job = st["slurm_job_id"]
    assert (st["state"], st["mode"]) == ("queued", "slurm") and new_job != old_job, st
    assert new_job in {j["id"] for j in slurm.jobs()}  # SLURM has it, not this machine
    assert not (runs_dir / RUNNER_LOCK).exists()  # no local runner was started for it
    script = (run_dir / SLURM_SCRIPT).read_text()
    assert "job start --resume" in script and "SGA_TRAIN_RESUME=1" in script
    assert "partition" not in script
    for gone in ("slurm_state_final", "slurm_started_at", "slurm_reason", "error",
                 "ended_at", "slurm_unseen"):
        assert st.get(gone) is None, (gone, st)
    ev = run_status.read_eval(run_dir)  # its evaluation's job again, held by the new one
    assert ev["state"] == "queued" and ev["slurm_job_id"] not in (old_eval, new_job), ev
    deps = slurm.run("squeue", "-h", "-j", ev["slurm_job_id"], "-o", "%E").strip()
    assert deps.startswith(f"afterok:{new_job}"), deps

    st = ended(run_dir)
    assert st["state"] == "completed" and st["step"] == STEPS, st
    assert st["slurm_job_id"] == new_job and (st["resumes"], st["resumed_from"]) == (1, 10)
    wait_for(lambda: any(j["id"] == new_job and j["state"] == "COMPLETED"
                         for j in slurm.jobs()), 120, f"SLURM to end job {new_job} well")
    log = (run_dir / SLURM_LOG).read_text()
    assert f"resumed from its checkpoint at step 10) submitted to SLURM as job {new_job}" \
        in log, log[-2000:]
    ev = wait_for(lambda: (v := run_status.effective_eval(run_dir))["state"]
                  in run_status.FINAL_STATES and v, 600, "the evaluation job", interval=1.0)
    assert ev["state"] == "completed", ev
    # the same run as one never interrupted: each step once, the same losses and weights
    assert ended(whole)["state"] == "completed"
    got, want = losses(run_dir), losses(whole)
    assert [s for s, _ in got] == list(range(1, STEPS + 1))
    assert max(abs(a - b) for (_, a), (_, b) in zip(got, want)) <= TOLERANCE
    assert max_diff(weights(run_dir), weights(whole)) <= TOLERANCE


def slurm_run(root: Path, tmp_path: Path) -> Path:
    """A SLURM run as a cancel by request leaves it (its job, SLURM's verdict, the CANCEL
    file); no checkpoint yet, and no profile of its own (a run submitted before runs kept
    one): its resume asks for the workspace's."""
    forget = tmp_path / "forget.jsonl"
    forget.write_text('{"question": "q", "answer": "a"}\n')
    cfg = TrainConfig.from_dict({"run_id": "cut", "method": "ga", "data": {"forget": str(forget)},
                                 "launch": {"device": "cpu"}, "eval": {"enabled": False}})
    run_dir = create_run(cfg, root, mode="slurm")
    (run_dir / SLURM_SCRIPT).write_text(run_script(ClusterProfile(cpus=1), run_dir, cfg))
    RunFolder(run_dir).cancel_path.write_text("")
    run_status.write_run(run_dir, "cancelled", backend="slurm", slurm_job_id="4242",
                         slurm_submitted_at="2026-01-01T00:00:00",
                         slurm_started_at="2026-01-01T00:00:01", slurm_node="n1",
                         slurm_state_final="CANCELLED", cancel_requested_at="2026-01-01",
                         step=3, error="cancelled by request")
    return run_dir


def test_a_slurm_resume_that_cannot_go_to_slurm_leaves_the_run_as_it_was(
        slurm, ws, tmp_path, runs_dir):
    run_dir = slurm_run(runs_dir, tmp_path)
    save_profile(ClusterProfile(cpus=1, partition="nope"), ws)  # a partition gone since
    jobs = {j["id"] for j in slurm.jobs()}
    # no local runner may start a training here, whatever the resume does
    with open(runs_dir / RUNNER_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        before = snapshot(run_dir)
        with pytest.raises(ValueError, match="no checkpoint to resume from"):
            wb.resume(run_dir, runs_dir)
        assert snapshot(run_dir) == before

        write_checkpoint(run_dir, 3)
        before = snapshot(run_dir)
        bare = tmp_path / "bin"  # SLURM not offered here: refused, not run on this machine
        bare.mkdir()
        out = sga_cli("train", "--resume", "cut", "--runs-dir", str(runs_dir),
                      env={"PATH": str(bare)})
        assert out.returncode == 2 and "SLURM, which is not available here" in out.stderr, \
            out.stdout + out.stderr
        assert snapshot(run_dir) == before

        with pytest.raises(SlurmError, match="(?i)invalid partition"):  # sbatch refuses
            wb.resume(run_dir, runs_dir)
        assert snapshot(run_dir) == before
    assert {j["id"] for j in slurm.jobs()} == jobs
    st = run_status.effective_run(run_dir)
    assert (st["state"], st["slurm_job_id"], st["mode"]) == ("cancelled", "4242", "slurm")
