"""False states from SLURM's answers, on the real one-node cluster (``slurm_cluster``
fixture): a ``$USER`` that is not the job's owner once made ``runs list`` settle a pending
run as failed for good, and its job, once it started, refused to train. Now squeue is asked
by uid and by job id, a miss is never final on one answer, and an inferred failure never
stops a job SLURM still has (docs/slurm.md#states)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sga_core.runs import status as run_status
from tests.helpers.cli import sga_cli
from tests.helpers.slurm import wait_for

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
NOBODY = {"USER": "nobody", "LOGNAME": "nobody", "SGA_SLURM_TTL": "0"}


def pending_run(slurm, runs: Path, name: str, **fields) -> Path:
    """A run folder whose job waits behind the blocker; the job runs what slurm.sh runs
    first (``job start``) and records its exit code in ``start.rc``."""
    run_dir = runs / name
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text("{}\n")
    wrap = (f"{sys.executable} -m sga_core.runs.slurm.job start {run_dir}; "
            f"echo $? > {run_dir / 'start.rc'}")
    jid = slurm.run("sbatch", "--parsable", "-c", "1", "-o", str(run_dir / "slurm.log"),
                    "--wrap", wrap).strip()
    run_status.write_run(run_dir, fields.pop("state", "queued"), backend="slurm",
                         slurm_job_id=jid, **fields)
    return run_dir


def test_a_wrong_user_name_never_fails_a_pending_run_and_its_job_trains(slurm, tmp_path):
    blocker = slurm.run("sbatch", "--parsable", "-c", str(slurm.cpus), "-o", "/dev/null",
                        "--wrap", "sleep 600").strip()
    wait_for(lambda: any(j["id"] == blocker and j["state"] == "RUNNING"
                         for j in slurm.jobs()), 120, "the blocking job to run")
    runs = tmp_path / "runs"
    fresh = pending_run(slurm, runs, "fresh")
    # as an older workbench left it: settled failed/UNKNOWN while its job was pending
    marked = pending_run(slurm, runs, "marked", state="failed", slurm_state_final="UNKNOWN",
                         slurm_reason="unknown to SLURM", ended_at="2026-11-24T08:00:00Z",
                         error="SLURM no longer knows job 1: it ended without its run "
                               "finishing (see slurm.log)")
    for _ in range(3):  # three processes, three answers: still nothing is final
        out = sga_cli("runs", "list", "--runs-dir", str(runs), env=NOBODY)
        assert out.returncode == 0, out.stderr
    lines = {ln.split()[0]: ln.split()[1] for ln in out.stdout.splitlines()
             if ln and not ln.startswith(" ")}
    assert lines == {"fresh": "queued", "marked": "queued"}, out.stdout
    assert out.stdout.count(": waiting") == 2, out.stdout  # SLURM's pending reasons
    out = sga_cli("runs", "show", "marked", "--runs-dir", str(runs), env=NOBODY)
    shown = json.loads(out.stdout[:out.stdout.rindex("}") + 1])
    assert shown["state"] == "queued" and shown["slurm_reason"].startswith("waiting"), shown
    assert run_status.read_run(fresh)["state"] == "queued"
    assert not run_status.read_run(fresh).get("slurm_state_final")

    slurm.run("scancel", blocker)
    for run_dir in (fresh, marked):
        wait_for(lambda d=run_dir: (d / "start.rc").exists(), 120, f"{run_dir.name}'s job")
        log = (run_dir / "slurm.log").read_text()
        assert (run_dir / "start.rc").read_text().strip() == "0", log  # it went on to train
        assert "not training" not in log
        st = run_status.read_run(run_dir)
        assert st["state"] == "queued" and st["slurm_node"] == slurm.node, st
        assert not st.get("slurm_state_final") and not st.get("error"), st
