"""The disk queue and its runner: one at a time, cancel in stages, vanished processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from sga_core.config import TrainConfig
from sga_core.runs import queue as jobs
from sga_core.runs.folder import request_cancel
from sga_core.runs.status import effective_run, read_run, write_run
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.slow


def tiny_cfg(model_dir, demo_dir, normals, **training):
    return TrainConfig.from_dict({
        "model": str(model_dir), "method": "sga", "method_args": {"r": -0.8, "k": 4},
        "data": {"forget": str(demo_dir / "forget.jsonl"), "normals": str(normals)},
        "training": {"batch_size": 4, "max_steps": 3, "probe_every": 0, "lr": 1e-3,
                     "eval_nll": False, **training},
        "eval": {"enabled": False},  # no follow-up evaluation (tests/e2e/test_evaluate.py does it)
    })


def wait_state(run_dir, states, timeout=90):
    assert jobs.wait_until(lambda: effective_run(run_dir).get("state") in states, timeout), \
        json.dumps(read_run(run_dir), indent=1)
    return effective_run(run_dir)


def test_queue_runs_one_at_a_time(tiny_model_dir, demo_dir, idk_normals_file, runs_dir):
    a = jobs.submit(tiny_cfg(tiny_model_dir, demo_dir, idk_normals_file), runs_dir)
    b = jobs.submit(tiny_cfg(tiny_model_dir, demo_dir, idk_normals_file), runs_dir)
    assert a != b
    sa = wait_state(a, {"completed"})
    sb = wait_state(b, {"completed"})
    # b started only after a ended (default: one job at a time)
    assert sb["started_at"] >= sa["ended_at"]
    assert sa["runner_pid"] == sb["runner_pid"]
    assert jobs.runner_alive(runs_dir)
    # the runner (whose jobs inherit it) runs at a lower CPU priority than the UI
    import psutil

    assert psutil.Process(sa["runner_pid"]).nice() == min(19, os.nice(0) + 10)


def test_cancel_queued_and_running(tiny_model_dir, demo_dir, idk_normals_file, runs_dir):
    long = jobs.submit(tiny_cfg(tiny_model_dir, demo_dir, idk_normals_file, max_steps=5000),
                       runs_dir)
    queued = jobs.submit(tiny_cfg(tiny_model_dir, demo_dir, idk_normals_file), runs_dir)
    assert jobs.wait_until(lambda: (long / "metrics.jsonl").exists(), 90)
    st = jobs.cancel(queued)
    assert st["state"] in ("queued", "cancelled")
    # the queued run ends at once, while the long one still runs (not when its turn comes)
    s_q = wait_state(queued, {"cancelled"}, timeout=15)
    assert effective_run(long)["state"] == "running"
    jobs.cancel(long)
    s_long = wait_state(long, {"cancelled"})
    assert 0 < s_long["step"] < 5000
    assert "started_at" not in s_q  # never started
    assert not (queued / "train.log").exists()


def test_killed_job_shows_failed(tiny_model_dir, demo_dir, idk_normals_file, runs_dir):
    run = jobs.submit(tiny_cfg(tiny_model_dir, demo_dir, idk_normals_file, max_steps=5000),
                      runs_dir)
    assert jobs.wait_until(lambda: read_run(run).get("pid"), 90)
    assert jobs.wait_until(lambda: (run / "metrics.jsonl").exists(), 90)
    os.kill(read_run(run)["pid"], signal.SIGKILL)
    st = wait_state(run, {"failed"}, timeout=10)
    assert st["error"]


def test_vanished_process_is_failed(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    run = tmp_path / "r"
    run.mkdir()
    (run / "config.yaml").write_text("method: sga\n")
    write_run(run, "running", pid=proc.pid, launcher_pid=proc.pid)
    st = effective_run(run)
    assert st["state"] == "failed" and "vanished" in st["error"]


def stubborn_job() -> subprocess.Popen:
    """A job that ignores SIGTERM (from the moment this returns), in a session of its own."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import signal,time; signal.signal(signal.SIGTERM, "
         "signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"],
        start_new_session=True, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_runner_escalates_cancel_to_sigterm_then_sigkill(tmp_path):
    """A job that ignores the CANCEL file and SIGTERM is killed after two grace periods."""
    from sga_core.runs.runner import Runner

    run = tmp_path / "stubborn"
    run.mkdir()
    write_run(run, "running")
    proc = stubborn_job()
    runner = Runner(tmp_path, grace_s=0.3)
    runner.active[run] = proc
    request_cancel(run)

    said = []  # what the runner logs, in order
    runner.log = said.append

    def killed() -> bool:  # the runner reaps until the job is gone, then is looked at
        if proc.poll() is not None:
            return True
        runner.reap()
        return False

    wait_for(killed, 10, "the stubborn job to be killed", interval=0.1)
    assert proc.poll() == -signal.SIGKILL
    # SIGTERM, then SIGKILL (the pass that finds the job gone forgets its escalation level,
    # and that can be the pass that sent SIGKILL: its log is what stays)
    signals = [line.rsplit(" ", 1)[-1] for line in said if "still running after cancel" in line]
    assert signals == ["SIGTERM", "SIGKILL"], said
    runner.reap()
    assert read_run(run)["state"] == "cancelled"
    proc.stdout.close()


def test_a_late_pass_still_sends_sigterm_before_sigkill(tmp_path):
    """A runner whose pass comes long after the cancel (a loaded box) sends SIGTERM first,
    so that the trainer can save; SIGKILL only on a later pass (it used to go straight to
    SIGKILL, and the job never saw SIGTERM)."""
    from sga_core.runs.runner import Runner

    run = tmp_path / "late"
    run.mkdir()
    write_run(run, "running")
    proc = stubborn_job()
    try:
        lines = []
        runner = Runner(tmp_path, grace_s=0.3)
        runner.log = lines.append
        runner.escalate(run, proc, waited=30.0)
        assert runner.escalated[run] == 1 and proc.poll() is None, lines
        assert lines and lines[-1].endswith("SIGTERM"), lines
        runner.escalate(run, proc, waited=30.1)
        assert runner.escalated[run] == 2 and lines[-1].endswith("SIGKILL"), lines
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()


def test_delete_refuses_active_and_rerun_copies_config(tiny_model_dir, demo_dir,
                                                       idk_normals_file, runs_dir):
    from sga_core.runs.create import create_run

    done = create_run(tiny_cfg(tiny_model_dir, demo_dir, idk_normals_file), runs_dir)
    write_run(done, "running", pid=os.getpid())
    with pytest.raises(RuntimeError, match="cancel it first"):
        jobs.delete(done)
    write_run(done, "completed")
    again = jobs.rerun(done, runs_dir)
    assert again != done
    import yaml

    a = yaml.safe_load((done / "config.yaml").read_text())
    b = yaml.safe_load((again / "config.yaml").read_text())
    for key in ("method", "method_args", "training", "model"):
        assert a[key] == b[key]
    jobs.delete(done)
    assert not done.exists()
    wait_state(again, {"completed"})


def test_background_priority_is_configurable(monkeypatch):
    from sga_core.runs.procs import nice_prefix

    assert nice_prefix()[1:] == ["-n", "10"]
    monkeypatch.setenv("SGA_JOB_NICE", "0")
    assert nice_prefix() == []
    assert nice_prefix(3)[1:] == ["-n", "3"]


def test_queue_order_is_submission_order_within_a_second(tiny_model_dir, demo_dir,
                                                         idk_normals_file, runs_dir):
    """The retain reference is queued before the original: it must run first, although
    both are created in the same second and 'demo-original' sorts first by name."""
    first = tiny_cfg(tiny_model_dir, demo_dir, idk_normals_file)
    first.run_id = "zz-queued-first"
    second = tiny_cfg(tiny_model_dir, demo_dir, idk_normals_file)
    second.run_id = "aa-queued-second"
    a = jobs.submit(first, runs_dir, start_runner=False)
    b = jobs.submit(second, runs_dir, start_runner=False)
    write_run(b, created_at=read_run(a)["created_at"])  # the same second for sure
    assert jobs.queued_runs(runs_dir) == [a, b]


def test_killed_launcher_takes_its_trainer_along(tiny_model_dir, demo_dir, idk_normals_file,
                                                 runs_dir):
    """SIGKILL of the accelerate launcher: within 10 s its trainer is gone or the run still
    shows running; it is never shown failed while its trainer trains."""
    from sga_core.runs.procs import pid_alive

    run = jobs.submit(tiny_cfg(tiny_model_dir, demo_dir, idk_normals_file, max_steps=5000),
                      runs_dir)
    assert jobs.wait_until(lambda: read_run(run).get("pid") and
                           (run / "metrics.jsonl").exists(), 90)
    st = read_run(run)
    trainer = st["pid"]
    os.kill(st["launcher_pid"], signal.SIGKILL)
    t0 = time.time()
    settled = False
    while time.time() - t0 < 30:
        state = effective_run(run)["state"]
        alive = pid_alive(trainer)
        assert not (state == "failed" and alive), "failed while the trainer still trains"
        if not alive or state == "running":
            settled = settled or time.time() - t0 < 10
        if not alive and state == "failed":
            break
        time.sleep(0.1)
    assert settled
    assert not pid_alive(trainer)
    assert effective_run(run)["state"] == "failed"
    assert "killed" in effective_run(run)["error"]


def test_run_whose_launcher_died_before_its_trainer_started_is_failed(tmp_path):
    """A foreground run whose CLI and launcher died before the trainer recorded its pid is
    not 'running' forever: it shows failed, and cancel and delete work."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    run = tmp_path / "orphan"
    run.mkdir()
    (run / "config.yaml").write_text("method: sga\n")
    write_run(run, "running", launcher_pid=proc.pid, pid=None, mode="foreground")
    assert effective_run(run)["state"] == "failed"
    assert jobs.cancel(run)["state"] == "failed"
    jobs.delete(run)
    assert not run.exists()
