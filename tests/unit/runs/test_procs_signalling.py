"""Signalling only our own processes: a pid read from a run folder is signalled, or counted as
alive, only while it still names the process recorded there (its start time; for an old
record without one, a command line that runs sga_core). Junk, 0, 1 and negative pids never
reach os.kill: ``kill(-1, SIGTERM)`` would signal every process of the user."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from sga_core.runs import procs, queue
from sga_core.runs import status as run_status

JUNK = [-1, 0, 1, True, False, "abc", "1234", [1], {"pid": 5}, 10**30, 2.5, None,
        procs.pid_max() + 1, -os.getpid()]


@pytest.fixture
def kill_calls(monkeypatch):
    """Every os.kill / os.killpg call (pid, signal); a pid <= 1 or a non-int fails the test
    at once instead of signalling anything (so a regression cannot hit other processes)."""
    calls = []
    real_kill, real_killpg = os.kill, os.killpg

    def guarded(real):
        def call(pid, sig):
            calls.append((pid, sig))
            if type(pid) is not int or pid <= 1:
                raise AssertionError(f"os.kill reached with pid {pid!r}")
            return real(pid, sig)
        return call

    monkeypatch.setattr(os, "kill", guarded(real_kill))
    monkeypatch.setattr(os, "killpg", guarded(real_killpg))
    return calls


def sleeper(tmp_path, name: str) -> subprocess.Popen:
    return procs.spawn(["sleep", "120"], tmp_path / f"{name}.log", nice=0)


def gone(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait(60)


def survives(proc: subprocess.Popen) -> bool:
    """Whether ``proc`` is still running a moment after a signal might have been sent (a
    SIGTERM ends ``sleep`` at once)."""
    try:
        proc.wait(2)
    except subprocess.TimeoutExpired:
        return True
    return False


def running_eval(run_dir, **fields) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text("{}\n")
    run_status.write_run(run_dir, "completed")
    run_status.write_eval(run_dir, "running", stage="generating", **fields)


def test_junk_pids_are_never_signalled_nor_alive(tmp_path, kill_calls):
    for pid in JUNK:
        assert procs.valid_pid(pid) is None, pid
        assert procs.pid_alive(pid) is False, pid
        assert procs.signal_ours({"pid": pid, "start": None}, signal.SIGTERM) is False
        assert procs.kill_group({"pid": pid, "start": 1}, signal.SIGTERM) is False
        assert procs.group_alive(pid) is False, pid
        run_dir = tmp_path / f"run-{len(kill_calls)}-{abs(hash(repr(pid)))}"
        running_eval(run_dir, pid=pid)
        queue.cancel_eval(run_dir)  # nothing is signalled
        view = run_status.effective_eval(run_dir)
        assert view["state"] != "running" or pid in (None, 0, False), (pid, view)
    for nothing in (None, "x", 5, {"start": 3}):
        assert procs.signal_ours(nothing, signal.SIGTERM) is False
    assert all(type(p) is int and p > 1 for p, _ in kill_calls)


def test_a_reused_pid_is_neither_signalled_nor_running(tmp_path, kill_calls):
    first = sleeper(tmp_path, "first")
    old = procs.record(first.pid)
    assert old["start"] is not None and procs.pid_alive(first.pid, old["start"])
    gone(first)
    assert not procs.pid_alive(first.pid, old["start"])
    second = sleeper(tmp_path, "second")
    while procs.start_time(second.pid) == old["start"]:  # the same clock tick (10 ms):
        gone(second)  # a real reuse comes after 32768 other pids, never this soon
        second = sleeper(tmp_path, "second")
    try:
        # the kernel gave the evaluator's pid to another process: fake it by putting the
        # new process's pid in the old record (with the old start time)
        reused = {"pid": second.pid, "start": old["start"]}
        assert procs.start_time(second.pid) != old["start"]
        assert not procs.pid_alive(second.pid, old["start"])
        assert procs.signal_ours(reused, signal.SIGTERM) is False
        assert procs.kill_group(reused, signal.SIGKILL) is False
        run_dir = tmp_path / "run"
        running_eval(run_dir, pid=second.pid, pid_start=old["start"])
        assert run_status.effective_eval(run_dir)["state"] == "failed"  # not running forever
        queue.cancel_eval(run_dir)
        run_status.write_run(run_dir, "running", launcher_pid=second.pid,
                             launcher_pid_start=old["start"], pid=None)
        assert run_status.effective_run(run_dir)["state"] == "failed"
        assert survives(second), "a process that merely got a recorded pid was killed"
        # its own record does reach it
        assert procs.signal_ours(procs.record(second.pid), signal.SIGTERM) is True
        assert second.wait(60) == -signal.SIGTERM
    finally:
        if second.poll() is None:
            gone(second)


def test_the_evaluator_it_records_is_cancelled(tmp_path, kill_calls):
    ev = sleeper(tmp_path, "eval")
    try:
        run_dir = tmp_path / "run"
        running_eval(run_dir, pid=ev.pid)  # the writer adds its start time
        assert run_status.read_eval(run_dir)["pid_start"] == procs.start_time(ev.pid)
        assert run_status.effective_eval(run_dir)["state"] == "running"
        queue.cancel_eval(run_dir)
        assert ev.wait(60) == -signal.SIGTERM
    finally:
        if ev.poll() is None:
            gone(ev)


def test_an_old_record_without_start_time_needs_our_command_line(tmp_path, kill_calls):
    stranger = sleeper(tmp_path, "stranger")  # `sleep`: not a workbench process
    ours = procs.spawn([sys.executable, "-c", "import sga_core, time; time.sleep(120)"],
                       tmp_path / "ours.log", nice=0)
    try:
        for proc in (stranger, ours):
            run_dir = tmp_path / f"run-{proc.pid}"
            running_eval(run_dir, pid=proc.pid, pid_start=None)
            queue.cancel_eval(run_dir)
        assert survives(stranger)
        assert ours.wait(60) == -signal.SIGTERM
    finally:
        for proc in (stranger, ours):
            if proc.poll() is None:
                gone(proc)


def test_the_group_of_a_gone_leader_is_still_stopped(tmp_path, kill_calls):
    # a launcher killed while its trainer runs: the runner stops the rest of its group
    launcher = procs.spawn(["sh", "-c", "sleep 120 & echo started"], tmp_path / "l.log",
                           nice=0)
    launcher.wait(60)
    assert queue.wait_until(lambda: procs.group_alive(launcher.pid), 60)
    assert procs.kill_group(launcher, signal.SIGKILL) is True
    assert queue.wait_until(lambda: not procs.group_alive(launcher.pid), 60)
    # a group whose leader is gone and whose members started before it is not that group
    assert procs.kill_group({"pid": launcher.pid, "start": 10**12}, signal.SIGKILL) is False
