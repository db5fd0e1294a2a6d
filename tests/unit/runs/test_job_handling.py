"""Job handling: a run folder with a live job is never replaced and the
runner never writes into one that was; a queued run says why it waits; a cancel shows
"cancelling", is escalated to SIGKILL for processes proven ours, and a cancelled job is shown
cancelled at once; the prepared models are re-run in place; evaluation sets are part of a
run's snapshot; the claim of a request and its cancel are atomic. Real processes (sleeping
stand-ins spawned as the runner spawns its jobs), no model."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import shutil
import signal
import sys
import time
import types
from pathlib import Path

import pytest

from sga_core.config import ConfigError, TrainConfig
from sga_core.fileio import atomic_write_json, now_iso
from sga_core.runs import procs, queue
from sga_core.runs.create import create_run
from sga_core.runs.folder import RunFolder
from sga_core.runs.progress import eval_progress, progress, stress_progress
from sga_core.runs.runner import Runner
from sga_core.runs.status import (
    effective_eval,
    effective_run,
    effective_stress,
    read_eval,
    read_run,
    read_stress,
    write_eval,
    write_run,
    write_stress,
)
from tests.helpers.jobs import stand_in_model
from tests.helpers.wait import wait_for as shared_wait_for

DEMO = Path(__file__).resolve().parents[3] / "assets" / "demo"
STUBBORN = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(120)")


def wait_for(pred, what: str):
    """The shared wait (tests/helpers/wait.py): 20 s, polled every 50 ms."""
    return shared_wait_for(pred, 20.0, what, interval=0.05)


@pytest.fixture()
def no_runner(monkeypatch):
    """Requests are written, but no runner is started to take them."""
    monkeypatch.setattr(queue, "ensure_runner", lambda root=None, **kw: None)


@pytest.fixture()
def kids():
    """Processes a test starts: killed at its end, whatever happened."""
    started: list = []
    yield started
    for p in started:
        procs.signal_ours(p, signal.SIGKILL, group=True)
        try:
            p.wait(timeout=10)
        except Exception:  # noqa: BLE001
            pass


def stand_in(log: Path, kids: list, stubborn: bool = False):
    """A job process as the runner starts one (procs.spawn: own session, its record); a
    stubborn one ignores SIGTERM (an evaluation deep in a long generation)."""
    code = STUBBORN if stubborn else "print('ready', flush=True); import time; time.sleep(120)"
    proc = procs.spawn([sys.executable, "-c", code], log, nice=0, append=False)
    kids.append(proc)
    wait_for(lambda: log.exists() and "ready" in log.read_text(), what="stand-in ready")
    return proc


def prepare_like(root: Path, run_id: str = "demo-retain-ref", sets: dict | None = None,
                 notes: str = "prepare: retain reference") -> Path:
    """A completed run folder made as prepare makes its runs (a stand-in model)."""
    cfg = TrainConfig.from_dict({
        "model": stand_in_model(root.parent), "method": "finetune",
        "method_args": {"include_forget": "original" in run_id},
        "data": {"forget": str(DEMO / "forget.jsonl"), "retain": str(DEMO / "retain.jsonl")},
        "run_id": run_id, "notes": notes,
        "eval": {"sets": dict(sets or {}), "reference": str(root / "demo-retain-ref")}})
    d = create_run(cfg, root)
    RunFolder(d).model_dir.mkdir()
    (RunFolder(d).model_dir / "config.json").write_text("{}")
    write_run(d, "completed", ended_at=now_iso())
    return d


# --- (a) a folder with a live job is never replaced; the runner never writes into one ------

def test_prepare_refuses_a_folder_whose_evaluation_is_still_stopping(tmp_path, kids):
    from sga_core.projects.prepare import prepare

    root = tmp_path / "runs"
    ref = prepare_like(root)
    proc = stand_in(tmp_path / "eval.log", kids, stubborn=True)
    write_eval(ref, "running", pid=proc.pid, pid_start=proc.sga_record["start"],
               stage="generating", host=os.uname().nodename)
    queue.cancel_eval(ref)  # stopping, not stopped: it ignores SIGTERM
    assert proc.poll() is None
    with pytest.raises(ConfigError) as err:  # (a model that cannot load: nothing trains)
        prepare(str(DEMO / "forget.jsonl"), str(DEMO / "retain.jsonl"), name="demo",
                model=stand_in_model(tmp_path), runs_dir=root, echo=lambda m: None,
                evaluate=False, training={"max_steps": 1})
    assert "demo-retain-ref" in str(err.value) and "evaluation" in str(err.value)
    assert "still stopping" in str(err.value)
    # nothing was touched: the cancel request is still there
    assert read_eval(ref).get("cancel_requested_at")
    assert RunFolder(ref).has_model()


def test_prepare_page_refuses_too(tmp_path, kids, no_runner):
    from sga_core.projects import create_demo_project
    from sga_core.projects.training import submit_prepare

    project = create_demo_project(root=tmp_path / "workspace")
    root = tmp_path / "runs"
    ref = prepare_like(root)
    proc = stand_in(tmp_path / "stress.log", kids)
    write_stress(ref, "running", pid=proc.pid, pid_start=proc.sga_record["start"],
                 host=os.uname().nodename)
    with pytest.raises(ConfigError, match="stress test is running"):
        submit_prepare(project, model=stand_in_model(tmp_path), root=root)
    assert not (root / "demo-original").exists() and RunFolder(ref).has_model()


def test_a_finished_record_whose_process_still_runs_is_live(tmp_path, kids):
    """The issue's case: the training process still evaluating in-process after its run
    said completed (or a cancelled record whose process has not exited yet)."""
    run = prepare_like(tmp_path / "runs")
    assert queue.live_jobs(run) == []
    proc = stand_in(tmp_path / "t.log", kids)
    write_run(run, pid=proc.pid, pid_start=proc.sga_record["start"])
    assert queue.live_jobs(run) == [f"its training process (pid {proc.pid}) still runs"]


def test_the_runner_never_writes_into_a_replaced_folder(tmp_path, kids):
    """A job whose folder was replaced under it (prepared again by hand, rm -rf) is stopped
    and dropped; the new run there stays queued, never "killed by signal 9"."""
    root = tmp_path / "runs"
    run = prepare_like(root)
    proc = stand_in(tmp_path / "old-eval.log", kids, stubborn=True)
    runner = Runner(root, grace_s=0.3)
    runner.evals[run] = proc
    runner.claim("evaluation", run)
    runner.active[run] = proc  # its trainer evaluating in-process, as the issue saw it
    runner.claim("training", run)
    import shutil

    shutil.rmtree(run)
    new = prepare_like(root)  # the same path, another run
    write_run(new, "queued", mode="queue")
    wait_for(lambda: (runner.reap(), proc.poll() is not None)[1], what="orphan stopped")
    runner.reap()
    assert runner.evals == {} and runner.active == {}
    assert read_run(new)["state"] == "queued" and "error" not in read_run(new)
    assert read_eval(new) == {}


def test_a_queued_run_says_why_it_waits(tmp_path, kids, no_runner):
    root = tmp_path / "runs"
    busy = prepare_like(root, "demo-original", notes="prepare: original")
    first = prepare_like(root, "zz-queued-first", notes="mine")
    waiting = prepare_like(root, "demo-retain-ref")
    for d in (first, waiting):
        write_run(d, "queued", mode="queue")
    assert "no queue runner" in queue.wait_reason(waiting)
    with open(root / queue.RUNNER_LOCK, "a") as lock:  # a runner holds the queue
        fcntl.flock(lock, fcntl.LOCK_EX)
        runner = Runner(root, max_parallel=1)
        runner.evals[busy] = stand_in(tmp_path / "e.log", kids)
        runner.start_queued()  # every slot taken: it reads the queue, starts nothing
        runner.say_slots()
        assert read_run(first)["state"] == "queued"
        said = queue.wait_reason(waiting)
        assert said == ("waiting for a free slot: 1 of 1 in use by demo-original (evaluation);"
                        " 1 queued before it")
        assert progress(waiting)["text"] == f"queued: {said}"
        assert queue.wait_reason(first).endswith("(evaluation)")
        # a trainer that evaluates its run in process holds a training slot: said as what
        # it does now (a new user read "(training)" while it evaluated)
        del runner.evals[busy]
        runner.active[busy] = stand_in(tmp_path / "t.log", kids)
        runner.say_slots()
        write_run(busy, "running")
        assert queue.wait_reason(first).endswith("in use by demo-original (training)")
        write_run(busy, "completed")
        write_eval(busy, "running", stage="generating answers")
        assert queue.wait_reason(first).endswith(
            "in use by demo-original (evaluating after training)")
        del runner.active[busy]
        runner.say_slots()
        assert queue.wait_reason(waiting) == "waiting for 1 run(s) queued before it"
        assert queue.wait_reason(first) == "starting"
    assert queue.wait_reason(busy) is None  # not queued



def test_a_run_held_for_memory_says_so_as_its_wait_reason(tmp_path, no_runner):
    """The runner's memory check (runs/memory.py) holds a text run while other jobs run:
    the queue's one wait reason is that check's, not "starting"."""
    root = tmp_path / "runs"
    waiting = prepare_like(root, "text-run")
    why = "waiting for memory: it needs about 9.3 GB and 4.1 GB are free while 1 job runs"
    write_run(waiting, "queued", mode="queue", waiting_for=why)
    with open(root / queue.RUNNER_LOCK, "a") as lock:  # a runner holds the queue
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert queue.wait_reason(waiting) == why
        assert progress(waiting)["text"] == f"queued: {why}"

# --- (b) cancelling is shown, and escalated for processes proven ours -----------------------

def test_a_cancelled_evaluation_shows_cancelling_and_is_killed_after_the_grace(tmp_path,
                                                                              kids):
    run = prepare_like(tmp_path / "runs")
    proc = stand_in(tmp_path / "eval.log", kids, stubborn=True)
    write_eval(run, "running", pid=proc.pid, pid_start=proc.sga_record["start"],
               stage="generating", host=os.uname().nodename, cancel_requested_at=None)
    runner = Runner(run.parent, grace_s=0.3)
    runner.evals[run] = proc
    queue.cancel_eval(run)
    ev = eval_progress(run)
    assert ev["state"] == "running" and ev["cancelling"]
    assert ev["text"].startswith("cancelling the evaluation") and ev["eta_s"] is None
    wait_for(lambda: (runner.reap(), proc.poll() is not None)[1], what="escalated")
    assert proc.returncode == -signal.SIGKILL
    runner.reap()
    assert read_eval(run)["state"] == "cancelled"
    assert read_eval(run)["error"] == "cancelled by request"


def test_a_cancelled_stress_test_is_killed_after_the_grace(tmp_path, kids):
    run = prepare_like(tmp_path / "runs")
    proc = stand_in(tmp_path / "stress.log", kids, stubborn=True)
    write_stress(run, "running", pid=proc.pid, pid_start=proc.sga_record["start"],
                 host=os.uname().nodename, attacks=["quant8"])
    runner = Runner(run.parent, grace_s=0.3)
    runner.stresses[run] = proc
    queue.cancel_stress(run)
    assert stress_progress(run)["cancelling"]
    wait_for(lambda: (runner.reap(), proc.poll() is not None)[1], what="escalated")
    runner.reap()
    assert read_stress(run)["state"] == "cancelled"


def test_an_in_process_evaluation_cancel_escalates_its_trainer(tmp_path, kids):
    """The evaluation a trainer runs after training: its record names the trainer; the
    runner kills the training job's group, and records the evaluation cancelled."""
    run = prepare_like(tmp_path / "runs")
    proc = stand_in(tmp_path / "train.log", kids, stubborn=True)
    write_run(run, "completed", pid=proc.pid, pid_start=proc.sga_record["start"])
    write_eval(run, "running", pid=proc.pid, pid_start=proc.sga_record["start"],
               host=os.uname().nodename)
    runner = Runner(run.parent, grace_s=0.3)
    runner.active[run] = proc
    queue.cancel_eval(run)
    wait_for(lambda: (runner.reap(), run not in runner.active)[1], what="trainer killed")
    assert proc.returncode == -signal.SIGKILL
    assert read_eval(run)["state"] == "cancelled"


def test_a_cancelled_evaluation_another_runner_started_is_killed_too(tmp_path, kids):
    """The runner that started it is gone (or it is a foreground eval): the runner that
    serves the folder now kills it from its record, after twice the grace period."""
    run = prepare_like(tmp_path / "runs")
    proc = stand_in(tmp_path / "eval.log", kids, stubborn=True)
    write_eval(run, "running", pid=proc.pid, pid_start=proc.sga_record["start"],
               host=os.uname().nodename)
    queue.cancel_eval(run)
    runner = Runner(run.parent, grace_s=0.3)  # holds none of it
    wait_for(lambda: (runner.escalate_recorded(), proc.poll() is not None)[1],
             what="killed from its record")
    assert proc.returncode == -signal.SIGKILL
    assert effective_eval(run)["state"] == "cancelled"


def test_a_stranger_given_the_pid_is_never_escalated(tmp_path, kids):
    """The record's start time does not match (the pid was reused): no signal is sent."""
    run = prepare_like(tmp_path / "runs")
    stranger = stand_in(tmp_path / "s.log", kids, stubborn=True)
    write_eval(run, "running", pid=stranger.pid, pid_start=stranger.sga_record["start"] + 7,
               host=os.uname().nodename)
    queue.cancel_eval(run)
    write_eval(run, cancel_requested_at="2020-01-01T00:00:00Z")  # long ago
    Runner(run.parent, grace_s=0.0).escalate_recorded()
    assert stranger.poll() is None


# --- (c) the state shown is the true one at once -----------------------------------------

def dead_pid() -> int:
    import subprocess

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_cancelled_run_whose_process_is_gone_shows_cancelled_at_once(tmp_path, kids):
    """Between the trainer's death and the runner recording it, the page showed "failed -
    the training process vanished" and stopped refreshing on that final state."""
    run = prepare_like(tmp_path / "runs")
    gone = dead_pid()
    write_run(run, "running", pid=gone, launcher_pid=gone)
    assert effective_run(run)["state"] == "failed"  # nobody asked: it vanished
    proc = stand_in(tmp_path / "t.log", kids, stubborn=True)
    write_run(run, "running", pid=proc.pid, pid_start=proc.sga_record["start"],
              launcher_pid=None)
    queue.cancel(run)
    assert progress(run)["cancelling"] and progress(run)["text"].startswith("cancelling")
    procs.kill_group(proc, signal.SIGKILL)  # stopped, nothing recorded yet
    proc.wait(timeout=10)
    st = effective_run(run)
    assert st["state"] == "cancelled" and st["error"] == "cancelled by request"
    write_eval(run, "running", pid=gone, cancel_requested_at=now_iso())
    assert effective_eval(run)["state"] == "cancelled"
    write_stress(run, "running", pid=gone, cancel_requested_at=now_iso())
    assert effective_stress(run)["state"] == "cancelled"


# --- (d) a prepared model is re-run in place -----------------------------------------------

def test_rerun_of_the_retained_model_keeps_its_run_id(tmp_path, no_runner):
    root = tmp_path / "runs"
    ref = prepare_like(root)
    with pytest.raises(ValueError, match="Retained model: re-running it replaces it"):
        queue.rerun(ref, root)  # never a finetune-<time> the project does not use
    assert read_run(ref)["state"] == "completed"
    assert queue.prepared_role(ref) == "Retained"
    again = queue.rerun(ref, root, replace=True)
    assert again == ref
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == \
        ["demo-retain-ref"]  # no finetune-<time>
    assert read_run(ref)["state"] == "queued" and not RunFolder(ref).model_dir.exists()
    cfg = RunFolder(ref).config()
    assert cfg.run_id == "demo-retain-ref" and cfg.notes == "prepare: retain reference"
    assert cfg.eval.reference == str(ref)  # the reference against itself, as prepared
    assert (ref / cfg.data.forget).is_file() if not Path(cfg.data.forget).is_absolute() \
        else Path(cfg.data.forget).is_file()
    assert not (root / ".demo-retain-ref.old").exists()


def test_rerun_of_another_run_makes_a_new_one(tmp_path, no_runner):
    root = tmp_path / "runs"
    plain = prepare_like(root, "my-original-idea", notes="mine")
    again = queue.rerun(plain, root)
    assert again != plain and again.name.startswith("finetune-")
    assert queue.prepared_role(plain) is None


def test_rerun_in_place_is_refused_while_its_evaluation_runs(tmp_path, kids, no_runner):
    root = tmp_path / "runs"
    ref = prepare_like(root)
    proc = stand_in(tmp_path / "e.log", kids)
    write_eval(ref, "running", pid=proc.pid, pid_start=proc.sga_record["start"],
               host=os.uname().nodename)
    with pytest.raises(RuntimeError, match="evaluation is running"):
        queue.rerun(ref, root, replace=True)
    assert read_run(ref)["state"] == "completed" and RunFolder(ref).has_model()


# --- (e) evaluation sets are part of the snapshot ------------------------------------------

def test_a_removed_evaluation_set_still_evaluates_from_the_snapshot(tmp_path):
    src = tmp_path / "forget_qa.jsonl"
    src.write_text((DEMO / "real_authors.jsonl").read_text())
    run = prepare_like(tmp_path / "runs", sets={"forget_qa": str(src)})
    src.unlink()  # removed from the project
    kept = Path(RunFolder(run).config().eval.sets["forget_qa"])
    assert kept.is_file() and kept.is_relative_to(run)
    assert queue.eval_refusal(run) is None


def test_a_run_naming_a_removed_set_is_refused_with_the_reason(tmp_path, no_runner):
    """A run made before sets were snapshotted names the project's file."""
    import yaml

    run = prepare_like(tmp_path / "runs")
    cfg = yaml.safe_load(RunFolder(run).config_path.read_text())
    cfg["eval"]["sets"] = {"forget_qa": str(tmp_path / "project" / "eval" / "forget_qa.jsonl")}
    RunFolder(run).config_path.write_text(yaml.safe_dump(cfg))
    why = queue.eval_refusal(run)
    assert why and "forget_qa" in why and "no longer exists" in why
    with pytest.raises(ValueError, match="cannot evaluate demo-retain-ref: its evaluation set"):
        queue.request_eval(run)
    assert not RunFolder(run).eval_requested()
    # the runner's own start of it says the same, instead of a DataError from the evaluator
    Runner(run.parent).launch_eval(run)
    assert "no longer exists" in read_eval(run)["error"]


def test_a_missing_set_is_refused_before_any_run_folder_exists(tmp_path):
    with pytest.raises(ConfigError, match="eval.sets.gone: file"):
        prepare_like(tmp_path / "runs", sets={"gone": str(tmp_path / "gone.jsonl")})
    assert [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")] == []


# --- the claim of a request and its cancel are atomic --------------------------------------

def _claimer(run_dir, kind, barrier, out, rounds):
    for _ in range(rounds):
        barrier.wait()
        runner = Runner(Path(run_dir).parent)
        if kind == "stress":
            runner.launch_stress(Path(run_dir))
            proc = runner.stresses.get(Path(run_dir))
        else:
            runner.launch_eval(Path(run_dir), requested=True)
            proc = runner.evals.get(Path(run_dir))
        out.put(("claim", proc.pid if proc else None))
        barrier.wait()


def _canceller(run_dir, kind, barrier, out, rounds):
    for _ in range(rounds):
        barrier.wait()
        st = (queue.cancel_stress if kind == "stress" else queue.cancel_eval)(Path(run_dir))
        out.put(("cancel", st.get("state")))
        barrier.wait()


def _worker(role, run_dir, kind, barrier, out, rounds):
    """A racing process: says it is ready (its imports done), then plays ``role`` for
    ``rounds`` rounds; an exception is said (with its traceback) before it ends."""
    import traceback

    out.put(("ready", os.getpid()))
    try:
        (_claimer if role == "claim" else _canceller)(run_dir, kind, barrier, out, rounds)
    except BaseException:
        out.put(("error", traceback.format_exc()))
        raise


def _racers_said(workers, out, n: int, timeout: float = 120.0) -> list:
    """``n`` messages of the racing processes; a process's error, or one that died or went
    quiet, fails the test naming what each process was doing."""
    import queue as queue_mod

    said, deadline = [], time.monotonic() + timeout
    while len(said) < n:
        try:
            msg = out.get(timeout=1)
        except queue_mod.Empty:
            dead = [(w.pid, w.exitcode) for w in workers if w.exitcode not in (None, 0)]
            if dead or time.monotonic() > deadline:
                pytest.fail(f"racing processes: {len(said)} of {n} said {said}; exited: "
                            f"{[(w.pid, w.exitcode) for w in workers]}")
            continue
        if msg[0] == "error":
            pytest.fail(f"a racing process failed:\n{msg[1]}")
        said.append(msg)
    return said


@pytest.mark.parametrize("kind", ["stress", "eval"])
def test_claim_and_cancel_racing_have_exactly_one_outcome(tmp_path, kind, monkeypatch):
    """Four processes claim a request as the runner does while four cancel it, all at once:
    either nothing started and the request ended "cancelled before it started", or one
    process started and holds the cancel (it is stopped): never two started, never a
    running process shown cancelled, never a cancel lost."""
    run = prepare_like(tmp_path / "runs")
    rf = RunFolder(run)
    # spawn runs the parent's __main__ again in each child: in a test worker that can be the
    # page script an AppTest left there (app.py, which cleans the workspace at start)
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    ctx = multiprocessing.get_context("spawn")
    rounds = 6
    workers_each = 4  # 8 processes in all
    barrier, out = ctx.Barrier(2 * workers_each + 1), ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(role, str(run), kind, barrier, out, rounds))
               for role in ("claim",) * workers_each + ("cancel",) * workers_each]
    for w in workers:
        w.start()
    started_all = []
    try:
        # all eight started (a loaded machine takes its time to start Python eight times)
        _racers_said(workers, out, len(workers), timeout=600)
        for _ in range(rounds):
            status_path = rf.stress_status_path if kind == "stress" else rf.eval_status_path
            status_path.unlink(missing_ok=True)
            if kind == "stress":
                atomic_write_json(rf.stress_request_path, {"attacks": ["quant8"],
                                                           "settings": {}, "options": {}})
            else:
                atomic_write_json(rf.eval_request_path, {"requested_at": now_iso()})
            barrier.wait(timeout=120)  # go
            said = _racers_said(workers, out, 2 * workers_each)
            barrier.wait(timeout=120)  # all done
            started = [pid for what, pid in said if what == "claim" and pid]
            started_all += started
            st = read_stress(run) if kind == "stress" else read_eval(run)
            assert len(started) <= 1, said
            if started:
                assert st["state"] == "running" and st["pid"] == started[0], st
                assert st.get("cancel_requested_at"), st
            else:
                assert st["state"] == "cancelled", st
                assert st["error"] == "cancelled before it started", st
            assert not (rf.stress_request_path if kind == "stress"
                        else rf.eval_request_path).exists()
            for pid in started:  # a stand-in run ends here; the next round starts afresh
                procs.signal_ours({"pid": pid, "start": st.get("pid_start")},
                                  signal.SIGKILL, group=True)
                wait_for(lambda p=pid: not procs.pid_alive(p), what="job ended")
    finally:
        for w in workers:
            w.join(timeout=30)
            if w.is_alive():
                w.kill()
        for pid in started_all:
            if procs.pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert all(w.exitcode == 0 for w in workers)



def completed_queued_run(root: Path, run_id: str) -> Path:
    """A queued run folder whose config asks for an evaluation, with a model folder (what
    the runner's pick-up of a left evaluation looks for); its state is the caller's."""
    cfg = TrainConfig.from_dict({
        "model": stand_in_model(root.parent), "method": "ga", "run_id": run_id,
        "data": {"forget": str(DEMO / "forget.jsonl")},
        "training": {"max_steps": 1}, "eval": {"enabled": True}})
    run = create_run(cfg, root, mode="queue")
    RunFolder(run).model_dir.mkdir()
    for name in ("config.json", "model.safetensors"):
        (RunFolder(run).model_dir / name).write_text("{}")
    return run


def test_an_evaluation_a_stopped_runner_left_is_started_by_the_next(tmp_path, kids):
    """A queued run completed, and the runner that would have started its evaluation was
    stopped first: the next runner starts it (and only once)."""
    run = completed_queued_run(tmp_path / "runs", "left")
    write_run(run, "completed")
    runner = Runner(run.parent)
    runner.start_requested()
    proc = runner.evals.get(run)
    assert proc is not None, read_eval(run)
    kids.append(proc)
    assert read_eval(run)["state"] == "running" and read_eval(run)["pid"] == proc.pid
    runner.start_requested()  # held already: not started twice
    assert runner.evals[run] is proc and runner.busy() == 1


def test_a_completed_run_whose_trainer_still_lives_is_not_evaluated_twice(tmp_path, kids):
    """A trainer that evaluates in-process writes "completed" first: while it lives, no
    runner starts a second evaluation of the run."""
    run = completed_queued_run(tmp_path / "runs", "inproc")
    trainer = stand_in(tmp_path / "t.log", kids)
    write_run(run, "completed", pid=trainer.pid, pid_start=trainer.sga_record["start"])
    runner = Runner(run.parent)
    runner.start_requested()
    assert runner.evals == {} and read_eval(run) == {}


# --- a run on another run's model waits for it, and fails saying why without one ----------

def run_on(root: Path, run_id: str, source: Path) -> Path:
    """A queued run that trains from ``source``'s model (an unlearning run launched on the
    Original while Prepare is still queued)."""
    cfg = TrainConfig.from_dict({
        "model": str(RunFolder(source).model_dir), "method": "ga", "run_id": run_id,
        "data": {"forget": str(DEMO / "forget.jsonl")}, "training": {"max_steps": 1},
        "eval": {"enabled": False}})
    return create_run(cfg, root, mode="queue")


def failed_on_upstream(run: Path, source: str, ended: str) -> None:
    """``run`` failed without starting a trainer, saying the run it trains from ``ended``
    without a model."""
    st = read_run(run)
    assert st["state"] == "failed", st
    assert st["error"] == (f"cannot start: it trains from run {source}'s model, and that run "
                           f"{ended} without one: prepare (or train) it again, then launch "
                           "this run again")
    assert "traceback" not in st and not RunFolder(run).train_log_path.exists()


def test_a_run_on_a_run_killed_outright_fails_instead_of_waiting_forever(tmp_path, kids,
                                                                       no_runner):
    """A MUSE sustainability study: request 2 trains from request 1's model. Request 1's
    trainer and the runner were killed with SIGKILL (or the machine restarted): its status
    file still says running, and request 2 waited for it for ever. The next runner now sees
    request 1 as it is shown (failed: its processes are gone) and fails request 2, saying
    why, starting no trainer."""
    from sga_core.runs import upstream
    from sga_core.runs.status import effective_run

    root = tmp_path / "runs"
    first = completed_queued_run(root, "sust-ga-r1")
    shutil.rmtree(RunFolder(first).model_dir)  # killed before it saved its model
    second = run_on(root, "sust-ga-r2", first)
    trainer = stand_in(tmp_path / "trainer.log", kids)
    write_run(first, "running", pid=trainer.pid, pid_start=trainer.sga_record["start"])
    assert upstream.gate(second)[0] == upstream.WAIT  # alive: request 2 waits
    os.killpg(trainer.pid, signal.SIGKILL)
    trainer.wait()
    assert read_run(first)["state"] == "running"  # what the file still says
    assert effective_run(first)["state"] == "failed"
    with open(root / queue.RUNNER_LOCK, "a") as lock:  # the next runner
        fcntl.flock(lock, fcntl.LOCK_EX)
        runner = Runner(root, max_parallel=1)
        runner.start_queued()
    assert runner.active == {}
    failed_on_upstream(second, "sust-ga-r1", "failed")


def test_a_run_on_a_cancelled_original_fails_saying_why_and_starts_nothing(tmp_path,
                                                                          no_runner):
    """A new user cancelled the queued Original to prepare it again: the GA and SGA runs
    queued on its model failed at once with a traceback (ModelError: model folder ...
    does not exist). They now wait while it is queued or running, and fail with the reason,
    starting no trainer, once it ended without a model."""
    from sga_core.runs import upstream

    root = tmp_path / "runs"
    original = completed_queued_run(root, "books-original")
    shutil.rmtree(RunFolder(original).model_dir)  # not trained yet
    ga = run_on(root, "ga-8steps", original)
    assert upstream.source_run(ga) == original
    with open(root / queue.RUNNER_LOCK, "a") as lock:  # a runner holds the queue
        fcntl.flock(lock, fcntl.LOCK_EX)
        runner = Runner(root, max_parallel=2)  # a free slot: only the gate holds it back
        write_run(original, "running")
        runner.start_queued()
        assert runner.active == {} and read_run(ga)["state"] == "queued"
        assert queue.wait_reason(ga) == ("waiting for run books-original (running): it "
                                         "trains from that run's model")
        write_run(original, "cancelled", ended_at=now_iso(),
                  error="cancelled before it started")
        runner.start_queued()
    assert runner.active == {}
    failed_on_upstream(ga, "books-original", "was cancelled")
    # a completed Original with its model lets it start; a model of the hub is no run's
    write_run(original, "completed")
    RunFolder(original).model_dir.mkdir()
    (RunFolder(original).model_dir / "config.json").write_text("{}")
    assert upstream.gate(run_on(root, "sga-8steps", original)) == (upstream.GO, None)
    assert upstream.source_run(completed_queued_run(root, "own-model")) is None
