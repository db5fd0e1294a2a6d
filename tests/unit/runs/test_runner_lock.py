"""The queue lock: one runner per runs folder, and nothing else ever stops one from serving.
A probe of :func:`sga_core.runs.queue.runner_alive` (each page asks it every second) never
counts as a runner, to another probe or to a runner starting in that instant; and a run
queued in the instant the runner goes idle is served (its submitter saw the runner alive
and started none). Real locks on a real lock file, a real runner process."""

from __future__ import annotations

import fcntl
import subprocess
import sys
import threading

from sga_core.runs import queue
from sga_core.runs.queue import RUNNER_LOCK, runner_alive, take_runner_lock
from sga_core.runs.runner import Runner, serve
from sga_core.runs.status import write_run
from tests.helpers.wait import wait_for


def probe_held(root):
    """A probe caught in the middle (the lock taken as :func:`runner_alive` takes it)."""
    fh = open(root / RUNNER_LOCK, "a")
    fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
    return fh


def test_a_probe_is_never_taken_for_a_runner_by_another_probe(tmp_path):
    held = probe_held(tmp_path)
    try:
        assert runner_alive(tmp_path) is False
    finally:
        held.close()


def test_a_runner_starting_while_a_probe_holds_the_lock_takes_it_after(tmp_path,
                                                                       monkeypatch):
    tries = []
    real = fcntl.flock

    def counted(fh, op):  # a try counts once it was made (the probe closed after it)
        try:
            return real(fh, op)
        finally:
            if op & fcntl.LOCK_EX:
                tries.append(op)

    monkeypatch.setattr(queue.fcntl, "flock", counted)
    held, got = probe_held(tmp_path), []
    fh = open(tmp_path / RUNNER_LOCK, "a")
    starting = threading.Thread(target=lambda: got.append(take_runner_lock(fh)))
    starting.start()
    wait_for(lambda: tries, 20, "the runner's first try for the lock", interval=0.01)
    held.close()  # the probe ends
    starting.join(timeout=30)
    assert got == [True] and len(tries) >= 2
    assert runner_alive(tmp_path) is True  # and it holds it now
    fh.close()


def test_a_second_runner_leaves_the_folder_to_the_first(tmp_path):
    first = open(tmp_path / RUNNER_LOCK, "a")
    assert take_runner_lock(first)
    try:
        second = subprocess.run(
            [sys.executable, "-m", "sga_core.runs.runner", "--runs-dir", str(tmp_path)],
            capture_output=True, text=True, timeout=120)
        assert second.returncode == 0
        assert "another runner is already serving this runs folder" in second.stderr
        assert runner_alive(tmp_path)
    finally:
        first.close()
    assert not runner_alive(tmp_path)


def queue_one(root, run_id: str):
    run_dir = root / run_id
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("method: ga\n")
    write_run(run_dir, "queued", run_id=run_id, mode="queue", created_at="2026-01-01T00:00:00Z")
    return run_dir


class GoingIdle(Runner):
    """A runner whose loop ends idle at once; ``arrivals`` are queued as it ends (a submit
    that found it alive), one per loop."""

    def __init__(self, root, arrivals):
        super().__init__(root, idle_exit_s=0.0)
        self.arrivals, self.loops, self.held = list(arrivals), 0, []

    def run(self) -> int:
        self.loops += 1
        self.held.append(runner_alive(self.root))  # the lock is its own while it serves
        self.queue_seen = [d.name for d in queue.queued_runs(self.root)]
        if self.arrivals:
            queue_one(self.root, self.arrivals.pop(0))
        return 0


def test_a_run_queued_as_the_runner_goes_idle_is_served(tmp_path):
    lock = open(tmp_path / RUNNER_LOCK, "a")
    assert take_runner_lock(lock)
    runner = GoingIdle(tmp_path, ["late-run"])
    assert serve(runner, lock) == 0
    # it looked again, found the run and served a second time, holding the lock; then idle
    # with nothing new, it let the folder go
    assert runner.loops == 2 and runner.held == [True, True]
    assert not runner_alive(tmp_path)
    lock.close()


def test_an_idle_runner_with_nothing_new_exits(tmp_path):
    queue_one(tmp_path, "seen-before")  # queued and seen: waiting, not new
    lock = open(tmp_path / RUNNER_LOCK, "a")
    assert take_runner_lock(lock)
    runner = GoingIdle(tmp_path, [])
    assert serve(runner, lock) == 0
    assert runner.loops == 1 and not runner_alive(tmp_path)
    lock.close()
