"""The queue runner: ``python -m sga_core.runs.runner --runs-dir runs``.

One runner per runs folder (an exclusive lock); it starts queued runs in submission order, at
most ``--max-parallel`` at a time, records how each ended, escalates cancels (CANCEL file ->
SIGTERM to the process group after ``--grace`` seconds -> SIGKILL after twice that), evaluates
completed runs, stress-tests those asked for (``STRESS_REQUESTED``), and exits after
``--idle-exit`` seconds with nothing to do (the UI starts it again when needed).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import sys
import time
from pathlib import Path

from sga_core.fileio import atomic_write_json, now_iso
from sga_core.runs import launch, memory
from sga_core.runs import status as run_status
from sga_core.runs.folder import (
    CANCEL_FILE,
    EVAL_REQUEST,
    RunFolder,
    eval_request_protocol,
    eval_request_sets,
    list_runs,
)
from sga_core.runs.procs import kill_group
from sga_core.runs.queue import RUNNER_INFO, RUNNER_LOCK, queued_runs


class Runner:
    def __init__(self, root: Path, max_parallel: int = 1, grace_s: float = 10.0,
                 idle_exit_s: float = 120.0, poll_s: float = 0.5):
        self.root = root
        self.max_parallel = max_parallel
        self.grace_s = grace_s
        self.idle_exit_s = idle_exit_s
        self.poll_s = poll_s
        self.active: dict[Path, object] = {}  # run_dir -> Popen of its launcher
        # follow-up evaluations (python -m sga_core eval RUN_DIR) of completed runs: they
        # hold a slot like a training job, since evaluation is CPU/GPU heavy too
        self.evals: dict[Path, object] = {}  # run_dir -> Popen
        # stress tests asked for (python -m sga_core stress RUN_DIR): a slot each too
        self.stresses: dict[Path, object] = {}  # run_dir -> Popen
        self.escalated: dict[Path, int] = {}
        self.stop = False

    def log(self, msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    def reap(self) -> None:
        for run_dir, proc in list(self.active.items()):
            cancel_file = run_dir / CANCEL_FILE
            if proc.poll() is None and cancel_file.exists():
                self.escalate(run_dir, proc, time.time() - cancel_file.stat().st_mtime)
            if not launch.reap(run_dir, proc):
                continue
            launch.cancelled_after_exit(run_dir)
            self.log(f"{run_dir.name}: {run_status.read_run(run_dir).get('state')} "
                     f"(exit {proc.returncode})")
            del self.active[run_dir]
            self.start_eval(run_dir)
        self.reap_evals()
        self.reap_stresses()

    def busy(self) -> int:
        return len(self.active) + len(self.evals) + len(self.stresses)

    def start_eval(self, run_dir: Path) -> None:
        """Evaluate a run that just completed, when its config's eval.enabled is true."""
        if launch.should_evaluate(run_dir):
            self.launch_eval(run_dir)

    def launch_eval(self, run_dir: Path) -> None:
        sets, protocol = eval_request_sets(run_dir), eval_request_protocol(run_dir)
        (run_dir / EVAL_REQUEST).unlink(missing_ok=True)
        try:
            self.evals[run_dir] = launch.start_eval(run_dir, sets, protocol=protocol)
        except Exception as exc:  # evaluation problems never stop the queue
            run_status.write_eval(run_dir, "failed", ended_at=now_iso(),
                                  error=f"cannot start the evaluation: {exc}")
            return
        self.log(f"{run_dir.name}: evaluating (pid {self.evals[run_dir].pid})")

    def reap_evals(self) -> None:
        for run_dir, proc in list(self.evals.items()):
            if proc.poll() is None:
                continue
            st = launch.finish_eval(run_dir, proc.returncode)
            self.log(f"{run_dir.name}: evaluation {st.get('state')} "
                     f"(exit {proc.returncode})")
            del self.evals[run_dir]

    def launch_stress(self, run_dir: Path) -> None:
        """Start the stress test a run's ``STRESS_REQUESTED`` asks for (the marker goes: a
        cancel from now on signals the process)."""
        run = RunFolder(run_dir)
        request = run.stress_request()
        run.stress_request_path.unlink(missing_ok=True)
        if request is None:  # cancelled (dropped) meanwhile, or unreadable
            return
        try:
            self.stresses[run_dir] = launch.start_stress(
                run_dir, request["attacks"], request["settings"], request["options"])
        except Exception as exc:  # stress-test problems never stop the queue
            run_status.write_stress(run_dir, "failed", ended_at=now_iso(),
                                    error=f"cannot start the stress test: {exc}")
            return
        self.log(f"{run_dir.name}: stress-testing (pid {self.stresses[run_dir].pid})")

    def reap_stresses(self) -> None:
        for run_dir, proc in list(self.stresses.items()):
            if proc.poll() is None:
                continue
            st = launch.finish_stress(run_dir, proc.returncode)
            self.log(f"{run_dir.name}: stress test {st.get('state')} "
                     f"(exit {proc.returncode})")
            del self.stresses[run_dir]

    def start_requested_stress(self) -> None:
        """Stress tests asked for (queue.request_stress: a STRESS_REQUESTED marker), of
        completed runs, one per run at a time."""
        for r in list_runs(self.root):
            if self.busy() >= self.max_parallel:
                return
            run_dir = Path(r["path"])
            if r["state"] == "completed" and run_dir not in self.stresses and \
                    RunFolder(run_dir).stress_requested():
                self.launch_stress(run_dir)

    def escalate(self, run_dir: Path, proc, waited: float) -> None:
        level = self.escalated.get(run_dir, 0)
        if waited > 2 * self.grace_s and level < 2:
            self.log(f"{run_dir.name}: still running after cancel, SIGKILL")
            kill_group(proc, signal.SIGKILL)
            self.escalated[run_dir] = 2
        elif waited > self.grace_s and level < 1:
            self.log(f"{run_dir.name}: still running after cancel, SIGTERM")
            kill_group(proc, signal.SIGTERM)
            self.escalated[run_dir] = 1

    def start_queued(self) -> None:
        queue = queued_runs(self.root)
        for run_dir in queue:  # a cancelled queued run ends now, not when its turn comes
            if run_dir not in self.active and (run_dir / CANCEL_FILE).exists():
                run_status.write_run(run_dir, "cancelled", ended_at=now_iso(),
                                     error="cancelled before it started")
        for run_dir in queue:
            if self.busy() >= self.max_parallel:
                return
            if run_dir in self.active or (run_dir / CANCEL_FILE).exists():
                continue
            if not memory.admit(run_dir, self.busy()):  # it would not fit: waits or fails
                continue
            try:
                proc = launch.start(run_dir)
            except Exception as exc:  # a broken run folder must not stop the queue
                run_status.write_run(run_dir, "failed", ended_at=now_iso(),
                                     error=f"cannot start: {exc}")
                continue
            run_status.write_run(run_dir, runner_pid=os.getpid())
            self.active[run_dir] = proc
            self.log(f"{run_dir.name}: started (pid {proc.pid})")

    def start_requested_evals(self) -> None:
        """Evaluations asked for by hand (queue.request_eval: an EVAL_REQUESTED marker)."""
        for r in list_runs(self.root):
            if self.busy() >= self.max_parallel:
                return
            run_dir = Path(r["path"])
            if r["state"] == "completed" and run_dir not in self.evals and \
                    (run_dir / EVAL_REQUEST).exists():
                self.launch_eval(run_dir)

    def run(self) -> int:
        idle_since = time.time()
        while not self.stop:
            self.reap()
            self.start_queued()
            self.start_requested_evals()
            self.start_requested_stress()
            if self.active or self.evals or self.stresses:
                idle_since = time.time()
            elif time.time() - idle_since > self.idle_exit_s:
                break
            time.sleep(self.poll_s)
        return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sga_core.runs.runner")
    p.add_argument("--runs-dir", default="runs")
    p.add_argument("--max-parallel", type=int, default=1)
    p.add_argument("--grace", type=float, default=10.0,
                   help="seconds between cancel stages (CANCEL, SIGTERM, SIGKILL)")
    p.add_argument("--idle-exit", type=float, default=120.0)
    args = p.parse_args(argv)
    root = Path(args.runs_dir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    lock = open(root / RUNNER_LOCK, "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("another runner is already serving this runs folder", file=sys.stderr)
        return 0
    atomic_write_json(root / RUNNER_INFO, {"pid": os.getpid(), "started_at": now_iso(),
                                           "max_parallel": args.max_parallel})
    from sga_core.runs.leftovers import clean_leftovers, clean_temp_leftovers

    # what killed processes left behind, an hour old
    for path in clean_leftovers(root) + clean_temp_leftovers():
        print(f"removed the leftover {path}", flush=True)
    runner = Runner(root, args.max_parallel, args.grace, args.idle_exit)

    def _stop(signum, frame):
        runner.stop = True

    signal.signal(signal.SIGTERM, _stop)
    runner.log(f"runner for {root} (max parallel {args.max_parallel})")
    return runner.run()


if __name__ == "__main__":
    sys.exit(main())
