"""The job contract on SLURM (the real one-node cluster of tests/helpers/slurm.py): every
kind of job a run folder has, sent through the backend interface (``backend("slurm")``), is
a SLURM job; pending behind a job that holds the node, a cancel means it never starts; once
running, a cancel stops it; its worker killed with SIGKILL, it is failed with the reason; a
delete while it runs is refused, and done after its cancel; each within SLURM's poll
interval, with no job left alive. The same cases on this machine's queue:
tests/e2e/test_job_contract.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from sga_core.runs import queue
from sga_core.runs import status as run_status
from sga_core.runs.backends import backend, backend_of
from sga_core.runs.jobs import KINDS, run_kinds
from sga_core.runs.slurm.client import TABLE
from sga_core.runs.slurm.profile import ClusterProfile, save_profile
from tests.helpers.jobs import long_training_config, request_long_stress
from tests.helpers.slurm import wait_for
from tests.helpers.stress import tiny_run

pytestmark = pytest.mark.slow
LIVE = ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING")
#: a state is true within this many seconds of the event (the table is asked each second)
SETTLE_S = 30.0
REACH_S = 300.0


@pytest.fixture()
def bench(slurm, tmp_path, tiny_model_dir, demo_dir, monkeypatch):
    monkeypatch.setenv("SGA_SLURM_TTL", "1")
    TABLE.ttl = 1.0
    ws = tmp_path / "ws"
    monkeypatch.setenv("SGA_WORKSPACE", str(ws))
    save_profile(ClusterProfile(cpus=1, time_limit="15"), ws)
    runs = tmp_path / "runs"
    runs.mkdir()
    return {"slurm": slurm, "runs": runs, "ws": ws, "model": tiny_model_dir, "demo": demo_dir}


def trained_on_slurm(bench, run_id: str, max_new_tokens: int = 4) -> Path:
    """A completed run whose status says it trained on SLURM: its jobs go there too."""
    run_dir = tiny_run(bench["runs"], bench["model"], bench["demo"], run_id,
                       max_new_tokens=max_new_tokens, completed=True, evaluated=True)
    run_status.write_run(run_dir, backend="slurm", mode="slurm")
    return run_dir


def ask_training(bench, run_id: str) -> Path:
    cfg = long_training_config(bench, run_id, device="cpu")
    return backend("slurm").launch([cfg], bench["runs"], workspace=bench["ws"])[0]


def ask_evaluation(bench, run_id: str) -> Path:
    run_dir = trained_on_slurm(bench, run_id, max_new_tokens=4096)
    queue.request_eval(run_dir)
    return run_dir


def ask_stress(bench, run_id: str) -> Path:
    return request_long_stress(trained_on_slurm(bench, run_id))


RECIPES = {"run": ask_training, "eval": ask_evaluation, "stress": ask_stress}


def job_of(kind, run_dir: Path) -> str:
    jid = kind.read_status(run_dir).get("slurm_job_id")
    assert jid and backend_of(kind.read_status(run_dir)).name == "slurm", \
        kind.read_status(run_dir)
    return jid


def ended(slurm, jid: str) -> bool:
    return all(j["state"] not in LIVE for j in slurm.jobs() if j["id"] == jid)


def cancel(key: str, run_dir: Path) -> dict:
    return queue.cancel(run_dir) if key == "run" else queue.cancel_job(key, run_dir)


def test_every_kind_has_a_recipe():
    assert set(RECIPES) == {k.key for k in run_kinds()}, \
        "a job kind without a SLURM contract recipe"


@pytest.mark.parametrize("key", sorted(RECIPES))
def test_pending_on_slurm_a_cancel_means_it_never_starts(bench, key):
    slurm, kind = bench["slurm"], KINDS[key]
    blocker = slurm.run("sbatch", "--parsable", "-c", str(slurm.cpus), "-o", "/dev/null",
                        "--wrap", "sleep 600").strip()
    wait_for(lambda: any(j["id"] == blocker and j["state"] == "RUNNING"
                         for j in slurm.jobs()), 120, "the blocking job to run")
    run_dir = RECIPES[key](bench, f"{key}-pending")
    jid = job_of(kind, run_dir)
    assert kind.effective(run_dir)["state"] == "queued"
    cancel(key, run_dir)
    st = wait_for(lambda: (s := kind.effective(run_dir))["state"] == "cancelled" and s,
                  SETTLE_S, f"the {kind.name} to be cancelled")
    assert st["error"] == "cancelled before it started"
    slurm.run("scancel", blocker)
    wait_for(lambda: ended(slurm, jid) and ended(slurm, blocker), 120, "every job to end")
    assert next(j for j in slurm.jobs() if j["id"] == jid)["state"] == "CANCELLED"
    assert kind.effective(run_dir)["state"] == "cancelled"
    assert not kind.log_path(run_dir).exists()


@pytest.mark.parametrize("key", sorted(RECIPES))
def test_running_on_slurm_a_cancel_stops_it(bench, key):
    slurm, kind = bench["slurm"], KINDS[key]
    run_dir = RECIPES[key](bench, f"{key}-running")
    jid = job_of(kind, run_dir)
    ready = (lambda s: (s.get("step") or 0) >= 1) if key == "run" else \
        (lambda s: s.get("stage") not in (None, "starting"))
    wait_for(lambda: (s := kind.effective(run_dir))["state"] == "running" and ready(s),
             REACH_S, f"the {kind.name} to run", interval=1.0)
    cancel(key, run_dir)
    st = wait_for(lambda: (s := kind.effective(run_dir))["state"] in run_status.FINAL_STATES
                  and s, SETTLE_S + 30, f"the {kind.name} to end", interval=1.0)
    assert st["state"] == "cancelled", st
    wait_for(lambda: ended(slurm, jid), 60, "its job to end")
    # asked again: nothing changes
    assert cancel(key, run_dir)["state"] == "cancelled"


def running_on_slurm(key: str, kind, run_dir: Path) -> dict:
    ready = (lambda s: (s.get("step") or 0) >= 1) if key == "run" else \
        (lambda s: s.get("stage") not in (None, "starting"))
    return wait_for(lambda: (s := kind.effective(run_dir))["state"] == "running" and
                    s.get("pid") and ready(s) and s, REACH_S, f"the {kind.name} to run",
                    interval=1.0)


@pytest.mark.parametrize("key", sorted(RECIPES))
def test_its_worker_killed_on_slurm_it_is_failed_with_the_reason(bench, key):
    import os
    import signal

    slurm, kind = bench["slurm"], KINDS[key]
    run_dir = RECIPES[key](bench, f"{key}-killed")
    jid = job_of(kind, run_dir)
    st = running_on_slurm(key, kind, run_dir)
    os.kill(st["pid"], signal.SIGKILL)  # the worker, on the node (this machine)
    failed = wait_for(lambda: (s := kind.effective(run_dir))["state"]
                      in run_status.FINAL_STATES and s, SETTLE_S + 30,
                      f"the {kind.name} to end", interval=1.0)
    assert failed["state"] == "failed" and failed["error"], failed
    wait_for(lambda: ended(slurm, jid), 60, "its job to end")


@pytest.mark.parametrize("key", sorted(RECIPES))
def test_delete_while_it_runs_on_slurm_is_refused_then_done_after_its_cancel(bench, key):
    slurm, kind = bench["slurm"], KINDS[key]
    run_dir = RECIPES[key](bench, f"{key}-deleted")
    jid = job_of(kind, run_dir)
    running_on_slurm(key, kind, run_dir)
    with pytest.raises(RuntimeError, match=f"its {kind.name} is running"):
        queue.delete(run_dir)
    cancel(key, run_dir)
    wait_for(lambda: kind.effective(run_dir)["state"] == "cancelled" and ended(slurm, jid),
             SETTLE_S + 60, f"the {kind.name} and its job to end", interval=1.0)
    queue.delete(run_dir)
    assert not run_dir.exists()
