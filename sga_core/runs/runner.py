"""The queue runner: ``python -m sga_core.runs.runner --runs-dir runs``.

One runner per runs folder (an exclusive lock); it starts queued runs in submission order, at
most ``--max-parallel`` at a time, records how each ended, escalates cancels (CANCEL file ->
SIGTERM to the process group after ``--grace`` seconds -> SIGKILL after twice that; the same
for a cancelled evaluation or stress test, from the SIGTERM the cancel sent), evaluates
completed runs, stress-tests those asked for (``STRESS_REQUESTED``), says in ``.runner.json``
which jobs hold its slots (:func:`sga_core.runs.queue.wait_reason`), and exits after
``--idle-exit`` seconds with nothing to do (the UI starts it again when needed).

Each request is claimed under its run folder's lock, as the cancel of it is
(:mod:`sga_core.runs.queue`). A job whose run folder was deleted or replaced under it is
stopped, and nothing is recorded for it: the folder there now is another run's.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from sga_core.fileio import atomic_write_json, dir_lock, now_iso
from sga_core.runs import launch, memory, upstream
from sga_core.runs import status as run_status
from sga_core.runs.folder import CANCEL_FILE
from sga_core.runs.jobs import KINDS, run_kinds
from sga_core.runs.jobs import base as jobs
from sga_core.runs.listing import list_runs
from sga_core.runs.procs import is_ours, kill_group, recorded, signal_ours
from sga_core.runs.queue import (
    RUNNER_INFO,
    RUNNER_LOCK,
    queued_runs,
    runner_info,
    take_runner_lock,
)

#: the kinds of job the runner holds, by what a slot and a cancel call them
TRAINING, EVALUATION, STRESS = (KINDS[k].name for k in ("run", "eval", "stress"))


def _epoch(stamp) -> float | None:
    """An ISO time stamp of a status file (``now_iso``) as seconds since the epoch."""
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except (TypeError, ValueError):
        return None


def folder_ident(run_dir: Path) -> tuple | None:
    """Which folder ``run_dir`` is now: its inode and its creation stamps (``created_at``,
    ``queued_ns``: a resume rewrites the latter, but only of a run that has ended, never
    while one of its jobs runs); None when it is gone. Another value later means it was
    deleted or replaced (``prepare`` again, by hand)."""
    try:
        ino = os.stat(run_dir).st_ino
    except OSError:
        return None
    st = run_status.read_run(run_dir)
    return ino, (st.get("created_at"), st.get("queued_ns")) if st.get("created_at") else None


class Runner:
    def __init__(self, root: Path, max_parallel: int = 1, grace_s: float = 10.0,
                 idle_exit_s: float = 120.0, poll_s: float = 0.5):
        self.root = root
        self.max_parallel = max_parallel
        self.grace_s = grace_s
        self.idle_exit_s = idle_exit_s
        self.poll_s = poll_s
        # the jobs it started, one table per kind (sga_core.runs.jobs.KINDS): run_dir -> the
        # Popen of its process (a training's launcher); every job holds a slot, since
        # evaluating and stress-testing are as CPU/GPU heavy as training
        self.tables: dict[str, dict[Path, object]] = {k.name: {} for k in run_kinds()}
        self.escalated: dict = {}  # run_dir (training) or (run_dir, job) -> 1 SIGTERM, 2 KILL
        self.idents: dict[tuple[str, Path], tuple | None] = {}  # (job, run_dir) -> its folder
        self.orphaned: dict[tuple[str, Path], float] = {}  # since when it is stopped
        self.slots_said: tuple | None = None
        self.queue_seen: list[str] = []  # the queued runs' ids, in order, as last read
        self.recorded_at = 0.0  # when escalate_recorded last looked
        self.stop = False

    def _table(job: str):  # noqa: N805 - a property maker, run in the class body
        """A view of one kind's table (settable: a test sets the jobs a runner holds)."""
        return property(lambda self: self.tables[job],
                        lambda self, jobs: self.tables.__setitem__(job, dict(jobs)))

    active = _table(TRAINING)
    evals = _table(EVALUATION)
    stresses = _table(STRESS)

    def jobs(self) -> tuple[tuple[str, dict], ...]:
        return tuple(self.tables.items())

    def claim(self, job: str, run_dir: Path) -> None:
        """Remember which folder a job just started in was (:func:`folder_ident`)."""
        self.idents[(job, run_dir)] = folder_ident(run_dir)

    def forget(self, job: str, run_dir: Path) -> None:
        """A job that ended: its slot is free."""
        self.tables[job].pop(run_dir, None)
        key = (job, run_dir)
        self.idents.pop(key, None)
        self.orphaned.pop(key, None)
        self.escalated.pop(key, None)
        self.escalated.pop(run_dir if job == TRAINING else (run_dir, job), None)

    def orphan(self, job: str, run_dir: Path, proc, table: dict) -> bool:
        """Whether this job's folder was deleted or replaced since it started: it is then
        stopped (its process group SIGTERM, SIGKILL after the grace period; only while proven
        ours) and dropped once it ended, and nothing is written into the folder there now."""
        key = (job, run_dir)
        was, now = self.idents.get(key), folder_ident(run_dir)
        if was is None or (now is not None and now[0] == was[0] and
                           (now[1] == was[1] or None in (now[1], was[1]))):
            return False  # the same folder (a status being rewritten is no other folder)
        if proc.poll() is None:
            since = self.orphaned.setdefault(key, time.time())
            level = 2 if time.time() - since > self.grace_s else 1
            if self.escalated.get(key, 0) < level:
                self.log(f"{run_dir.name}: its folder was replaced or deleted; stopping its "
                         f"{job} (pid {proc.pid})")
                kill_group(proc, signal.SIGKILL if level == 2 else signal.SIGTERM)
                self.escalated[key] = level
            return True
        self.log(f"{run_dir.name}: the {job} of a folder since replaced or deleted ended "
                 f"(exit {proc.returncode}); nothing recorded")
        self.forget(job, run_dir)
        return True

    def cancel_asked(self, job: str, run_dir: Path) -> float | None:
        """When a cancel of this running job was asked (seconds since the epoch), None when
        none was: training, its CANCEL file, or the cancel of the evaluation its trainer
        runs in-process; any other job, ``cancel_requested_at``."""
        times = []
        if job == TRAINING:
            try:
                times.append((run_dir / CANCEL_FILE).stat().st_mtime)
            except OSError:
                pass
            ev, trainer = run_status.read_eval(run_dir), run_status.read_run(run_dir).get("pid")
            if ev.get("state") == "running" and trainer and ev.get("pid") == trainer:
                times.append(_epoch(ev.get("cancel_requested_at")))
        else:
            st = _kind(job).read_status(run_dir)
            if st.get("state") == "running":
                times.append(_epoch(st.get("cancel_requested_at")))
        times = [t for t in times if t is not None]
        return min(times) if times else None

    def say_slots(self) -> None:
        """Write which jobs hold the slots, and the queue's order as last seen, into
        .runner.json when that changed (a queued run says why it waits:
        :func:`sga_core.runs.queue.wait_reason`, which so reads one small file)."""
        slots = [{"run_id": d.name, "job": job} for job, table in self.jobs() for d in table]
        said = (slots, self.queue_seen)
        if said == self.slots_said:
            return
        try:
            atomic_write_json(self.root / RUNNER_INFO, {**runner_info(self.root),
                                                        "max_parallel": self.max_parallel,
                                                        "slots": slots,
                                                        "queue": self.queue_seen})
        except OSError:
            return
        self.slots_said = said

    def log(self, msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    # --- the one loop over every job it holds ---------------------------------------------
    def reap(self) -> None:
        """Each job it holds: stopped when its folder is gone, escalated when a cancel was
        asked and it still runs, and recorded once it ended (its slot is then free)."""
        for job, table in self.jobs():
            for run_dir, proc in list(table.items()):
                if self.orphan(job, run_dir, proc, table):
                    continue
                if proc.poll() is None:
                    asked = self.cancel_asked(job, run_dir)
                    if asked is not None:
                        self.escalate(run_dir, proc, time.time() - asked, job)
                if job == TRAINING:
                    if not launch.reap(run_dir, proc):  # its trainer may outlive its launcher
                        continue
                    launch.cancelled_after_exit(run_dir)
                    self.evaluation_ended_with(run_dir, proc.returncode)
                    st = run_status.read_run(run_dir)
                elif proc.poll() is None:
                    continue
                else:
                    st = jobs.finish(_kind(job), run_dir, proc.returncode)
                what = "" if job == TRAINING else f"{job} "
                self.log(f"{run_dir.name}: {what}{st.get('state')} (exit {proc.returncode})")
                self.forget(job, run_dir)
                if job == TRAINING:
                    self.start_eval(run_dir)
        self.say_slots()

    @staticmethod
    def evaluation_ended_with(run_dir: Path, returncode: int) -> None:
        """An evaluation its trainer ran in-process that the trainer's end left "running"
        (killed, e.g. after a cancel) is recorded as it ended: cancelled when a cancel was
        asked, else failed (:func:`sga_core.runs.jobs.base.finish`)."""
        ev = run_status.read_eval(run_dir)
        if ev.get("state") == "running" and not is_ours(recorded(ev)) and \
                ev.get("host") in (None, os.uname().nodename):
            launch.finish_eval(run_dir, returncode or -signal.SIGKILL)

    def busy(self) -> int:
        return sum(len(table) for table in self.tables.values())

    def start_eval(self, run_dir: Path) -> None:
        """Evaluate a run that just completed, when its config's eval.enabled is true."""
        if launch.should_evaluate(run_dir):
            self.launch(KINDS["eval"], run_dir, {})

    def launch(self, kind, run_dir: Path, given: dict | None = None) -> None:
        """Start a job of ``kind`` of a run folder: its request, claimed under the run
        folder's lock (a cancel that dropped it first means nothing starts), or ``given``
        (a job no request asked for: the evaluation a completed run's config asks for). One
        that cannot start is failed, saying why; nothing of it stops the queue."""
        try:
            with dir_lock(run_dir):
                req = jobs.claim(kind, run_dir) if given is None else given
                if req is None:
                    return  # cancelled meanwhile
                why = kind.refusal(run_dir) if kind.refusal else None
                if why:
                    kind.write(run_dir, "failed", ended_at=now_iso(), stage=None,
                               error=f"cannot start the {kind.name}: {why}")
                    return
                try:
                    self.tables[kind.name][run_dir] = jobs.start(kind, run_dir, req)
                except Exception as exc:  # a job's problems never stop the queue
                    kind.write(run_dir, "failed", ended_at=now_iso(),
                               error=f"cannot start the {kind.name}: {exc}")
                    return
        except FileNotFoundError:  # the run folder was deleted meanwhile
            return
        self.claim(kind.name, run_dir)
        self.log(f"{run_dir.name}: {kind.name} started "
                 f"(pid {self.tables[kind.name][run_dir].pid})")

    def launch_eval(self, run_dir: Path, requested: bool = False) -> None:
        """Start a run's evaluation (``requested``: the one its request marker asks for)."""
        self.launch(KINDS["eval"], run_dir, None if requested else {})

    def launch_stress(self, run_dir: Path) -> None:
        """Start the stress test a run's request marker asks for."""
        self.launch(KINDS["stress"], run_dir)

    def start_requested(self) -> None:
        """The jobs asked for by a request marker (an evaluation, a stress test), of
        completed runs, one of each kind per run at a time, while a slot is free; and the
        evaluation a queued run's config asks for that no runner started (the runner that
        reaped its training was stopped first: the next one picks it up)."""
        asked = [k for k in run_kinds() if k.request]
        evaluation = KINDS["eval"]
        for r in list_runs(self.root):
            run_dir = Path(r["path"])
            if r["state"] != "completed":
                continue
            for kind in asked:
                if self.busy() >= self.max_parallel:
                    return
                if run_dir not in self.tables[kind.name] and kind.requested(run_dir):
                    self.launch(kind, run_dir)
            # (the listing's fields first: this runs at every poll, over every run)
            if r.get("mode") == "queue" and r.get("eval_state") is None and \
                    r.get("eval_enabled") and self.busy() < self.max_parallel and \
                    self.left_unevaluated(run_dir):
                self.launch(evaluation, run_dir, {})

    def left_unevaluated(self, run_dir: Path) -> bool:
        """A completed queued run whose config asks for an evaluation that nobody started:
        none of its jobs is this runner's, and its training's processes are all gone (a
        trainer that evaluates in-process writes "completed" before it starts evaluating)."""
        if run_dir in self.active or run_dir in self.evals:
            return False
        st = run_status.read_run(run_dir)
        if any(st.get(k) and is_ours(recorded(st, k)) for k in KINDS["run"].pids):
            return False
        return launch.should_evaluate(run_dir)

    def escalate(self, run_dir: Path, proc, waited: float, job: str = TRAINING) -> None:
        """A job still running ``waited`` seconds after its cancel was asked: its process
        group is sent SIGTERM after the grace period and SIGKILL after twice that, each once
        and only while the group is proven ours (:func:`sga_core.runs.procs.kill_group`)."""
        key = run_dir if job == TRAINING else (run_dir, job)
        what = "" if job == TRAINING else f"its {job} "
        level = self.escalated.get(key, 0)
        # SIGTERM always comes first (the trainer saves a checkpoint on it), even when this
        # pass comes late, past twice the grace period: SIGKILL waits for a later pass
        if waited > 2 * self.grace_s and level == 1:
            self.log(f"{run_dir.name}: {what}still running after cancel, SIGKILL")
            kill_group(proc, signal.SIGKILL)
            self.escalated[key] = 2
        elif waited > self.grace_s and level < 1:
            self.log(f"{run_dir.name}: {what}still running after cancel, SIGTERM")
            kill_group(proc, signal.SIGTERM)
            self.escalated[key] = 1

    def escalate_recorded(self) -> None:
        """Cancelled jobs this runner does not hold (started by a runner before it, or a
        foreground ``eval``) that still run twice the grace period after the cancel:
        SIGKILL to the process their status records (its group when it leads one), only
        while proven ours (its recorded start time). Shown cancelled from then on
        (:func:`sga_core.runs.procs.derive`)."""
        if time.time() - self.recorded_at < min(5.0, self.grace_s):
            return  # a look at every run folder: not at every poll
        self.recorded_at = time.time()
        mine = {d for table in self.tables.values() for d in table}
        for r in list_runs(self.root):
            run_dir = Path(r["path"])
            if run_dir in mine:
                continue
            for kind in run_kinds():
                if not kind.request:
                    continue  # a training's cancel is its CANCEL file, followed by its caller
                st = kind.read_status(run_dir)
                asked = _epoch(st.get("cancel_requested_at"))
                if st.get("state") != "running" or asked is None or \
                        st.get("host") not in (None, os.uname().nodename) or \
                        time.time() - asked <= 2 * self.grace_s:
                    continue
                rec = recorded(st)
                key = (run_dir, kind.name, "recorded")
                if self.escalated.get(key) == rec:
                    continue
                if signal_ours(rec, signal.SIGKILL, group=True) or \
                        signal_ours(rec, signal.SIGKILL):
                    self.log(f"{run_dir.name}: its {kind.name} still running after cancel, "
                             f"SIGKILL (pid {rec['pid']})")
                self.escalated[key] = rec

    def start_queued(self) -> None:
        queue = queued_runs(self.root)
        self.queue_seen = [d.name for d in queue]
        for run_dir in queue:  # a cancelled queued run ends now, not when its turn comes
            if run_dir not in self.active and (run_dir / CANCEL_FILE).exists():
                run_status.write_run(run_dir, "cancelled", ended_at=now_iso(),
                                     error="cancelled before it started")
        for run_dir in queue:
            if self.busy() >= self.max_parallel:
                return
            if run_dir in self.active:
                continue
            # a run on another run's model (the Original being prepared) waits for it, and
            # fails saying why when it ended without one (a trainer would die on the path)
            gate, why = upstream.gate(run_dir)
            if gate == upstream.WAIT:
                self.hold(run_dir, why)
                continue
            if gate == upstream.FAIL:
                self.refuse(run_dir, why)
                continue
            if not memory.admit(run_dir, self.busy()):  # it would not fit: waits or fails
                continue
            try:
                with dir_lock(run_dir):  # the start is atomic with a cancel of the run
                    if (run_dir / CANCEL_FILE).exists() or \
                            run_status.read_run(run_dir).get("state") != "queued":
                        continue
                    try:
                        proc = launch.start(run_dir)
                    except Exception as exc:  # a broken run folder must not stop the queue
                        run_status.write_run(run_dir, "failed", ended_at=now_iso(),
                                             error=f"cannot start: {exc}")
                        continue
                    run_status.write_run(run_dir, runner_pid=os.getpid())
            except FileNotFoundError:  # deleted meanwhile
                continue
            self.active[run_dir] = proc
            self.claim(TRAINING, run_dir)
            self.log(f"{run_dir.name}: started (pid {proc.pid})")

    def hold(self, run_dir: Path, why: str) -> None:
        """Keep a queued run waiting, its ``waiting_for`` saying why (the field the memory
        check's hold uses, so the pages read one wait reason, not files on every poll);
        written only when it changes."""
        try:
            if run_status.read_run(run_dir).get("waiting_for") != why:
                run_status.write_run(run_dir, waiting_for=why)
        except FileNotFoundError:  # deleted meanwhile
            return

    def refuse(self, run_dir: Path, why: str) -> None:
        """A queued run that cannot start ends failed with ``why``, unless a cancel or
        another runner got to it first (decided under its folder's lock)."""
        try:
            with dir_lock(run_dir):
                if (run_dir / CANCEL_FILE).exists() or \
                        run_status.read_run(run_dir).get("state") != "queued":
                    return
                run_status.write_run(run_dir, "failed", ended_at=now_iso(),
                                     error=f"cannot start: {why}", waiting_for=None)
        except FileNotFoundError:
            return
        self.log(f"{run_dir.name}: cannot start: {why}")

    def work_waiting(self) -> bool:
        """Whether work came in since the last look: a queued run not seen then, or a job
        requested of a completed run (an idle runner had started every one it saw)."""
        if any(d.name not in self.queue_seen for d in queued_runs(self.root)):
            return True
        asked = [k for k in run_kinds() if k.request]
        return any(k.requested(Path(r["path"])) for r in list_runs(self.root)
                   if r["state"] == "completed" for k in asked)

    def run(self) -> int:
        idle_since = time.time()
        while not self.stop:
            self.reap()
            self.escalate_recorded()
            self.start_queued()
            self.start_requested()
            self.say_slots()
            if self.busy():
                idle_since = time.time()
            elif time.time() - idle_since > self.idle_exit_s:
                break
            time.sleep(self.poll_s)
        return 0


def _kind(job: str):
    """The job kind a table of the runner is named by."""
    return next(k for k in run_kinds() if k.name == job)


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
    if not take_runner_lock(lock):
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
    return serve(runner, lock)


def serve(runner: Runner, lock) -> int:
    """Run ``runner`` while it has work; idle, it gives the queue lock up and looks once
    more: a run queued in the instant it decided to exit found it alive and started no
    runner, so it serves again (unless another runner took the folder meanwhile)."""
    while True:
        runner.run()
        if runner.stop:
            return 0
        fcntl.flock(lock, fcntl.LOCK_UN)
        if not runner.work_waiting() or not take_runner_lock(lock):
            runner.log("idle: the runner exits")
            return 0
        runner.log("work came in as the runner went idle: it serves again")


if __name__ == "__main__":
    sys.exit(main())
