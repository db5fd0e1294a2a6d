"""A SLURM run that is stopped before its time limit saves, requeues itself and resumes with
no action from the researcher (the profile's ``resume_after_stop``; docs/slurm.md), on the
real one-node cluster of tests/helpers/slurm.py.

- the batch signal: ``scancel --signal=USR1 --batch`` sends the job's batch shell exactly
  what ``--signal=B:USR1@N`` makes SLURM send before a time limit, at a step the test picks;
- SLURM's own time-limit signal: once the run trains, the job's time limit is lowered so
  that slurmctld itself sends ``--signal=B:USR1@60`` at one of its next checks (they come
  30 s apart, so the signal's moment is not the test's); once the job requeued itself, the
  limit is raised again so the next attempt can finish.
"""

from __future__ import annotations

import math
import os
import re
import signal
from pathlib import Path

import pytest

from sga_core.fileio import read_jsonl
from sga_core.runs import status as run_status
from sga_core.runs.folder import SLURM_LOG, SLURM_SCRIPT
from sga_core.runs.slurm.profile import ClusterProfile, save_profile
from tests.e2e.test_slurm_runs import make_setup, shown, submit
from tests.helpers.slurm import wait_for

pytestmark = pytest.mark.slow
STEPS = 40


@pytest.fixture()
def setup(tmp_path, tiny_model_dir, monkeypatch):
    return make_setup(tmp_path, tiny_model_dir, monkeypatch)


def job_info(slurm, jid: str) -> dict[str, str]:
    """``scontrol show job``'s fields (JobState, Restarts, RunTime, TimeLimit ...)."""
    text = slurm.run("scontrol", "show", "job", "-o", jid)
    return dict(re.findall(r"(\w+)=(\S*)", text))


def seconds(hms: str) -> int:
    days, _, rest = hms.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    return int(days or 0) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]


def check_resumed_to_the_end(slurm, run_dir: Path, jid: str, steps: int) -> dict:
    st = wait_for(lambda: (v := shown(run_dir))["state"] in run_status.FINAL_STATES and v,
                  900, f"{run_dir.name} to end after its requeue", interval=1.0)
    assert st["state"] == "completed", st
    assert st["resumes"] >= 1 and 1 <= st["resumed_from"] < steps, st
    assert st["slurm_job_id"] == jid and st["slurm_restarts"] >= 1, st
    assert int(job_info(slurm, jid)["Restarts"]) >= 1  # SLURM's own count: the same job
    rows = read_jsonl(run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == list(range(1, steps + 1))
    log = (run_dir / SLURM_LOG).read_text()
    assert "requeueing the job to continue" in log, log[-3000:]
    return st


def profile(setup, **changes) -> None:
    save_profile(ClusterProfile(cpus=1, time_limit="15", resume_after_stop=True, **changes),
                 setup["ws"])


def test_a_run_signalled_before_its_time_limit_requeues_and_resumes(slurm, setup):
    profile(setup, signal_seconds=60)
    (run_dir,) = submit(setup, "--max-steps", str(STEPS), "--no-eval")
    text = (run_dir / SLURM_SCRIPT).read_text()
    assert "#SBATCH --requeue" in text and "#SBATCH --signal=B:USR1@60" in text
    jid = run_status.read_run(run_dir)["slurm_job_id"]
    wait_for(lambda: (shown(run_dir).get("step") or 0) >= 3, 600, "training at step 3",
             interval=0.5)
    slurm.run("scancel", "--signal=USR1", "--batch", jid)
    queued = wait_for(lambda: (v := shown(run_dir)).get("slurm_reason", "") and
                      "requeued" in v["slurm_reason"] and v, 300,
                      "the run shown requeued", interval=0.5)
    assert queued["state"] == "queued"
    check_resumed_to_the_end(slurm, run_dir, jid, STEPS)


def batch_shell(pid: int) -> int:
    """The job's batch shell (slurmd's copy of slurm.sh, ``slurm_script``) above ``pid``."""
    while pid > 1:
        if "slurm_script" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
            return pid
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
    raise RuntimeError("no batch shell above the trainer")


def usr1_ignored(pid: int) -> bool:
    """slurm.sh ignores USR1 once its trap has taken SLURM's signal (and passes it on)."""
    line = next(ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
                if ln.startswith("SigIgn:"))
    return bool(int(line.split()[1], 16) & (1 << (signal.SIGUSR1 - 1)))


def test_slurms_own_time_limit_signal_requeues_and_resumes(slurm, setup):
    """The trainer is held (SIGSTOP) from step 2 until SLURM's signal has reached the
    batch shell, so the stop falls mid-training however fast the machine trains."""
    profile(setup, signal_seconds=60)
    (run_dir,) = submit(setup, "--max-steps", str(STEPS), "--no-eval")
    jid = run_status.read_run(run_dir)["slurm_job_id"]
    st = wait_for(lambda: (v := shown(run_dir)).get("step", 0) >= 2 and v.get("pid") and v,
                  600, "training at step 2", interval=0.2)
    shell = batch_shell(st["pid"])
    os.kill(st["pid"], signal.SIGSTOP)
    try:
        # a time limit 70 to 130 s away: slurmctld sends USR1 at its first check with at
        # most 60 s left (its checks are 30 s apart), and would stop the job at the limit
        ran = seconds(job_info(slurm, jid)["RunTime"])
        slurm.run("scontrol", "update", f"JobId={jid}",
                  f"TimeLimit={math.ceil((ran + 70) / 60)}")
        wait_for(lambda: usr1_ignored(shell), 240, "SLURM's USR1 before the time limit",
                 interval=0.2)
    finally:
        os.kill(st["pid"], signal.SIGCONT)
    wait_for(lambda: int(job_info(slurm, jid)["Restarts"]), 120, "the job to requeue itself",
             interval=0.5)
    slurm.run("scontrol", "update", f"JobId={jid}", "TimeLimit=15")  # the next attempt ends
    st = check_resumed_to_the_end(slurm, run_dir, jid, STEPS)
    assert "TIMEOUT" not in (run_dir / SLURM_LOG).read_text(), st
