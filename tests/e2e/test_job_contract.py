"""The job contract (sga_core/runs/jobs, sga_core/runs/backends): every kind of job a run
folder has, on this machine's queue, through the real runner and real processes on the tiny
model. Each case ends in a true state within ``SETTLE_S`` seconds, with nothing of the job
left running:

- submitted, it runs and says so, then a cancel stops it (cancelled);
- queued behind a job holding the one slot, a cancel drops it: it never starts;
- its worker killed with SIGKILL, it is shown failed, with the reason;
- a delete while it runs is refused, naming it; after its cancel the delete goes through,
  and no writer re-creates the folder;
- a cancel asked again changes nothing.

A new kind (one module of sga_core/runs/jobs) must add its recipe to ``RECIPES``: the
first test fails until it does. The same cases on SLURM: tests/e2e/test_slurm_job_contract.py.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from sga_core.runs import procs, queue
from sga_core.runs.backends import backend
from sga_core.runs.folder import RunFolder
from sga_core.runs.jobs import KINDS, run_kinds
from sga_core.runs.queue import runner_info
from tests.helpers.jobs import long_training_config, request_long_stress
from tests.helpers.stress import tiny_run
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.slow
#: how soon after a cancel or a kill the job's state must be true (the runner's grace is 1 s)
SETTLE_S = 10.0
#: how long a job may take to start on a loaded machine
REACH_S = 240.0


def long_training(bench, run_id: str) -> Path:
    """A training of 100,000 steps: it runs until it is stopped."""
    return backend("local").launch([long_training_config(bench, run_id)], bench["runs"])[0]


def trained(bench, run_id: str, max_new_tokens: int = 4) -> Path:
    return tiny_run(bench["runs"], bench["model"], bench["demo"], run_id,
                    max_new_tokens=max_new_tokens, completed=True, evaluated=True)


def ask_evaluation(bench, run_id: str) -> Path:
    """An evaluation that generates 4,096 tokens an answer: it runs until it is stopped."""
    run_dir = trained(bench, run_id, max_new_tokens=4096)
    backend("local").submit(KINDS["eval"], run_dir, {"sets": {}})
    return run_dir


def ask_stress(bench, run_id: str) -> Path:
    """A relearning stress test of 100,000 steps: it runs until it is stopped."""
    return request_long_stress(trained(bench, run_id))


#: kind key -> how a test asks for a long job of that kind (a new kind adds its recipe)
RECIPES = {"run": long_training, "eval": ask_evaluation, "stress": ask_stress}


@pytest.fixture()
def bench(tmp_path, tiny_model_dir, demo_dir):
    """A runs folder with its runner (one slot, a cancel escalated after 1 s); everything the
    test started is stopped at its end."""
    runs = tmp_path / "runs"
    runs.mkdir()
    proc = procs.spawn(["python", "-m", "sga_core.runs.runner", "--runs-dir", str(runs),
                        "--max-parallel", "1", "--grace", "1", "--idle-exit", "600"],
                       runs / ".runner.log", nice=0)
    wait_for(lambda: queue.runner_alive(runs), REACH_S, "the runner")
    yield {"runs": runs, "model": tiny_model_dir, "demo": demo_dir}
    procs.kill_group(proc, signal.SIGKILL)
    proc.wait(30)
    for d in runs.iterdir():
        for kind in KINDS.values():
            st = kind.read_status(d) if d.is_dir() else {}
            for key in kind.pids:
                procs.kill_group(procs.recorded(st, key), signal.SIGKILL)


def running(kind, run_dir: Path) -> dict:
    """The job's status once it runs and its process is there (and, for a training, has
    made a step)."""
    def ready():
        st = kind.effective(run_dir)
        ok = st.get("state") == "running" and st.get("pid") and \
            procs.pid_alive(st["pid"], st.get("pid_start"))
        if ok and kind.key == "run":
            ok = (st.get("step") or 0) >= 1
        if ok and kind.key != "run":
            ok = st.get("stage") not in (None, "starting")
        return ok and st
    return wait_for(ready, REACH_S, f"the {kind.name} of {run_dir.name} to run")


def settled(kind, run_dir: Path, states: tuple[str, ...]) -> dict:
    st = wait_for(lambda: (s := kind.effective(run_dir)).get("state") in states and s,
                  SETTLE_S, f"the {kind.name} of {run_dir.name} to be {'/'.join(states)} "
                            f"(now {kind.effective(run_dir)})")
    return st


def gone(st: dict, kind) -> bool:
    """Nothing a status records still runs."""
    return not any(procs.is_ours(procs.recorded(st, k)) for k in kind.pids if st.get(k))


def slot_free(runs: Path) -> bool:
    return not runner_info(runs).get("slots")


def test_every_kind_has_a_recipe():
    assert set(RECIPES) == {k.key for k in run_kinds()}, "a job kind without a contract recipe"


@pytest.mark.parametrize("key", sorted(RECIPES))
def test_submitted_runs_then_a_cancel_stops_it(bench, key):
    kind = KINDS[key]
    run_dir = RECIPES[key](bench, f"{key}-cancel")
    st = running(kind, run_dir)
    queue.cancel_job(key, run_dir) if key != "run" else queue.cancel(run_dir)
    t0 = time.time()
    # stopped within the grace period and its escalation (1 s, then SIGKILL after 2 s)
    ended = settled(kind, run_dir, ("cancelled",))
    assert time.time() - t0 < SETTLE_S
    wait_for(lambda: gone(kind.read_status(run_dir), kind), SETTLE_S, "its processes to end")
    assert gone(st, kind)
    # asked again: nothing changes
    again = (queue.cancel_job(key, run_dir) if key != "run" else queue.cancel(run_dir))
    assert again["state"] == "cancelled" and again.get("ended_at") == ended.get("ended_at")
    wait_for(lambda: slot_free(bench["runs"]), SETTLE_S, "the runner to free the slot")


@pytest.mark.parametrize("key", sorted(RECIPES))
def test_queued_behind_the_slot_a_cancel_drops_it(bench, key):
    kind = KINDS[key]
    holder = long_training(bench, "holder")
    running(KINDS["run"], holder)
    run_dir = RECIPES[key](bench, f"{key}-queued")
    shown = kind.effective(run_dir)
    assert shown.get("state") == "queued" or kind.requested(run_dir), shown
    st = queue.cancel_job(key, run_dir) if key != "run" else queue.cancel(run_dir)
    assert st["state"] in ("queued", "cancelled")
    st = settled(kind, run_dir, ("cancelled",))
    assert st["error"] == "cancelled before it started" and not st.get("pid")
    assert not kind.log_path(run_dir).exists()
    queue.cancel(holder)
    settled(KINDS["run"], holder, ("cancelled",))
    # the dropped job never starts, even once the slot is free
    wait_for(lambda: slot_free(bench["runs"]), SETTLE_S, "the runner to free the slot")
    assert kind.effective(run_dir)["state"] == "cancelled" and not kind.requested(run_dir)


@pytest.mark.parametrize("key", sorted(RECIPES))
def test_its_worker_killed_it_is_failed_with_the_reason(bench, key):
    kind = KINDS[key]
    run_dir = RECIPES[key](bench, f"{key}-killed")
    st = running(kind, run_dir)
    os.kill(st["pid"], signal.SIGKILL)
    failed = settled(kind, run_dir, ("failed",))
    assert failed["error"], failed
    wait_for(lambda: gone(kind.read_status(run_dir), kind), SETTLE_S, "its processes to end")


@pytest.mark.parametrize("key", sorted(RECIPES))
def test_delete_while_it_runs_is_refused_then_done_after_its_cancel(bench, key):
    kind = KINDS[key]
    run_dir = RECIPES[key](bench, f"{key}-deleted")
    running(kind, run_dir)
    with pytest.raises(RuntimeError, match=f"its {kind.name} is running"):
        queue.delete(run_dir)
    assert RunFolder(run_dir).exists()
    queue.cancel_job(key, run_dir) if key != "run" else queue.cancel(run_dir)
    settled(kind, run_dir, ("cancelled",))
    wait_for(lambda: gone(kind.read_status(run_dir), kind), SETTLE_S, "its processes to end")
    wait_for(lambda: slot_free(bench["runs"]), SETTLE_S, "the runner to free the slot")
    queue.delete(run_dir)
    assert not run_dir.exists()
    # a writer that comes late (a status write of the job) never re-creates the folder
    with pytest.raises(FileNotFoundError):
        kind.write(run_dir, "failed", error="too late")
    assert not run_dir.exists()
