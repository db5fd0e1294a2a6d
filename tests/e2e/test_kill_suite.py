"""Kill -9 at several moments, with the tiny model and real runs: the foreground ``train``
caller (during model load, mid-training), the queue runner (mid-training), the trainer
(mid-training, during the model's save) and the evaluator (during evaluation). After each
kill, within ``SETTLE_S`` seconds, everything agrees: the run folder's status, ``runs list``
and ``runs show`` say cancelled or failed (never running once nothing of the run runs,
never completed when it is not), no half-written model counts as a model, and every page of
the app renders without an exception."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from sga_core.model.loading import is_model_folder
from sga_core.runs import procs
from sga_core.runs import status as run_status
from sga_core.runs.leftovers import clean_leftovers
from sga_core.runs.listing import list_runs
from tests.helpers.cli import sga_cli as cli
from tests.helpers.ui import APP
from tests.helpers.wait import wait_for as shared_wait_for

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
#: How soon after a kill every state must be true.
SETTLE_S = 10.0
#: How long a run may take to reach the moment of a kill (a loaded machine).
REACH_S = 180.0
PAGES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "app_pages").glob("*.py"))


def wait_for(predicate, timeout: float, what: str):
    """The shared wait (tests/helpers/wait.py), polled every 50 ms: a kill is to fall
    mid-training."""
    return shared_wait_for(predicate, timeout, what, interval=0.05)




class Bench:
    """A runs folder of the test's own, the processes it started and the runs it made."""

    def __init__(self, root: Path, model: Path, forget: Path):
        self.root, self.model, self.forget = root, model, forget
        self.runs = root / "runs"
        self.runs.mkdir(exist_ok=True)
        self.procs: list[subprocess.Popen] = []

    def popen(self, argv: list[str]) -> subprocess.Popen:
        proc = subprocess.Popen(argv, cwd=self.root, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def train(self, run_id: str, steps: int, *extra: str) -> subprocess.Popen:
        return self.popen([sys.executable, "-m", "sga_core", "train", "--model",
                           str(self.model), "--forget", str(self.forget), "--run-id", run_id,
                           "--max-steps", str(steps), "--runs-dir", str(self.runs), *extra])

    def runner(self) -> subprocess.Popen:
        from sga_core.runs.queue import runner_alive

        proc = self.popen([sys.executable, "-m", "sga_core.runs.runner", "--runs-dir",
                           str(self.runs), "--idle-exit", "600", "--grace", "2"])
        wait_for(lambda: runner_alive(self.runs), REACH_S, "the runner")
        return proc

    def status(self, run_id: str) -> dict:
        return run_status.read_run(self.runs / run_id)

    def cleanup(self) -> None:
        """Stop whatever of the test still runs: its own processes' groups and the
        processes its run folders record (only while they are provably those)."""
        for proc in self.procs:
            procs.kill_group(proc, signal.SIGKILL)
            if proc.poll() is None:
                proc.kill()
            proc.wait(60)
        for st in [run_status.read(p) for p in self.runs.glob("*/status.json")] + \
                  [run_status.read(p) for p in self.runs.glob("*/eval/status.json")]:
            for key in ("launcher_pid", "pid"):
                procs.kill_group(procs.recorded(st, key), signal.SIGKILL)


@pytest.fixture()
def bench(ui_env, tiny_model_dir, demo_dir):
    b = Bench(ui_env, tiny_model_dir, demo_dir / "forget.jsonl")
    try:
        yield b
    finally:
        b.cleanup()


def kill(pid) -> None:
    assert procs.valid_pid(pid), pid
    os.kill(pid, signal.SIGKILL)


def settled(bench: Bench, run_id: str, run_states: tuple[str, ...],
            eval_states: tuple = (None,)) -> dict:
    """Within SETTLE_S of a kill: the run's shown state is one of ``run_states`` (its
    evaluation's one of ``eval_states``); then the CLI and the folder agree with it, and a
    model is a model only when the run completed."""
    run_dir = bench.runs / run_id
    t0 = time.time()

    def agreed():
        view = run_status.run_view(run_dir)
        return view if (view.get("state") in run_states
                        and view.get("eval_state") in eval_states) else None

    view = wait_for(agreed, SETTLE_S, f"{run_id} to settle in {run_states} / {eval_states} "
                                      f"(now {run_status.run_view(run_dir)})")
    settle_s = time.time() - t0
    row = next(r for r in list_runs(bench.runs) if r["run_id"] == run_id)
    assert row["state"] == view["state"] and row["eval_state"] == view["eval_state"]
    res = cli("runs", "show", run_id, "--runs-dir", str(bench.runs), cwd=bench.root)
    assert res.returncode == 0, res.stderr
    shown = json.loads(res.stdout.split("\nlast metrics:")[0])
    assert shown["state"] == view["state"] and shown["eval_state"] == view["eval_state"]
    res = cli("runs", "list", "--runs-dir", str(bench.runs), cwd=bench.root)
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith(run_id))
    assert line.split()[1] == view["state"]
    assert f"eval:{view['eval_state'] or '-'}" in line.split()
    model = run_dir / "model"
    if view["state"] == "completed":
        assert is_model_folder(model) and (model / "model.safetensors").is_file()
    # whatever the state, a model folder is whole: the one atomic_dir put in place
    if model.exists():
        assert (model / "config.json").is_file() and (model / "model.safetensors").is_file()
    print(f"{run_id}: {view['state']} / eval {view['eval_state']} "
          f"{settle_s:.1f} s after the kill")
    return view


def pages_render(bench: Bench) -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)


def step_reached(bench: Bench, run_id: str, n: int = 2):
    st = bench.status(run_id)
    return st.get("state") == "running" and (st.get("step") or 0) >= n and st


def test_kill_the_foreground_caller_mid_training(bench):
    train = bench.train("fg-mid", 5000, "--no-eval")
    st = wait_for(lambda: step_reached(bench, "fg-mid"), REACH_S, "training steps")
    kill(train.pid)
    settled(bench, "fg-mid", ("cancelled",))
    wait_for(lambda: not procs.pid_alive(st["pid"], st.get("pid_start")), REACH_S,
             "the trainer to end after its cancel")
    pages_render(bench)


def test_kill_the_foreground_caller_during_model_load(bench):
    train = bench.train("fg-load", 5000, "--no-eval")
    # the trainer runs (its launcher is started) but has not made a step yet
    wait_for(lambda: bench.status("fg-load").get("launcher_pid"), REACH_S, "the launcher")
    assert not bench.status("fg-load").get("step")
    kill(train.pid)
    settled(bench, "fg-load", ("cancelled", "failed"))
    pages_render(bench)


def test_kill_the_runner_then_cancel(bench):
    runner = bench.runner()
    res = cli("train", "--model", str(bench.model), "--forget", str(bench.forget),
              "--run-id", "queued", "--max-steps", "5000", "--no-eval", "--queue",
              "--runs-dir", str(bench.runs), cwd=bench.root)
    assert res.returncode == 0, res.stderr
    st = wait_for(lambda: step_reached(bench, "queued"), REACH_S, "training steps")
    kill(runner.pid)
    runner.wait(60)
    # a queued run outlives its runner: it still trains, and says so
    assert procs.pid_alive(st["pid"], st.get("pid_start"))
    assert run_status.effective_run(bench.runs / "queued")["state"] == "running"
    res = cli("runs", "cancel", "queued", "--runs-dir", str(bench.runs), cwd=bench.root)
    assert res.returncode == 0, res.stderr
    settled(bench, "queued", ("cancelled",))
    pages_render(bench)


def test_kill_the_trainer_mid_training(bench):
    bench.runner()
    res = cli("train", "--model", str(bench.model), "--forget", str(bench.forget),
              "--run-id", "trainer-mid", "--max-steps", "5000", "--no-eval", "--queue",
              "--runs-dir", str(bench.runs), cwd=bench.root)
    assert res.returncode == 0, res.stderr
    st = wait_for(lambda: step_reached(bench, "trainer-mid"), REACH_S, "training steps")
    kill(st["pid"])
    view = settled(bench, "trainer-mid", ("failed",))
    assert "killed" in view["error"] or "vanished" in view["error"]
    pages_render(bench)


def test_kill_the_trainer_during_save(bench):
    train = bench.train("saving", 3, "--no-eval")
    run_dir = bench.runs / "saving"
    tmp = run_dir / ".model.tmp"
    # a 3-step run of the tiny model can pass its first step and end between two looks:
    # then there is no save left to kill in, and the run must simply be completed
    wait_for(lambda: step_reached(bench, "saving", 1) or train.poll() is not None
             or bench.status("saving").get("state") in ("completed", "failed"),
             REACH_S, "training steps")
    st = bench.status("saving")
    deadline = time.time() + REACH_S
    while not tmp.exists() and train.poll() is None and time.time() < deadline:
        pass  # the save of a tiny model takes milliseconds: watch for it without pausing
    caught = tmp.exists()
    if st.get("pid") and procs.pid_alive(st["pid"], st.get("pid_start")):
        kill(st["pid"])
    view = settled(bench, "saving", ("failed", "completed"))
    if view["state"] == "failed":
        assert not is_model_folder(run_dir / "model")
        assert not any(r["state"] == "completed" for r in list_runs(bench.runs))
    # a half-saved folder is a leftover clean-up removes (once past its grace period)
    clean_leftovers(bench.runs, now=time.time() + 7200)
    assert not tmp.exists()
    print(f"killed during the save: {caught}")
    pages_render(bench)


def test_kill_the_evaluator_during_evaluation(bench):
    bench.runner()
    res = cli("train", "--model", str(bench.model), "--forget", str(bench.forget),
              "--run-id", "evaluated", "--max-steps", "2", "--eval", "--queue",
              "--runs-dir", str(bench.runs), cwd=bench.root)
    assert res.returncode == 0, res.stderr
    run_dir = bench.runs / "evaluated"

    def evaluating():
        ev = run_status.read_eval(run_dir)
        return (ev.get("state") == "running" and ev.get("stage") not in (None, "starting")
                and ev.get("pid") and procs.pid_alive(ev["pid"], ev.get("pid_start")) and ev)

    ev = wait_for(evaluating, REACH_S, "the evaluation")
    kill(ev["pid"])
    view = settled(bench, "evaluated", ("completed",), ("failed",))
    assert view["eval_error"]
    res = cli("runs", "cancel", "evaluated", "--runs-dir", str(bench.runs), cwd=bench.root)
    assert "already completed: nothing to cancel" in res.stdout
    pages_render(bench)
