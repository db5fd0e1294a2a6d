"""A stress test as a job, without a model: the request marker and what refuses one, the
status the stress process and the runner write (JobRecord, finish_stress), cancel of a
queued one, the command line the runner starts, and the progress, fraction and ETA the
pages show (docs/stress-tests.md#queued-as-a-job)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from sga_core.fileio import atomic_write_json
from sga_core.params import ConfigError
from sga_core.runs import launch, queue
from sga_core.runs.folder import RunFolder
from sga_core.runs.listing import list_runs, stress_state
from sga_core.runs.progress import stress_eta, stress_fraction, stress_progress
from sga_core.runs.status import read_stress, write_run, write_stress
from sga_core.stress.job import JobRecord


def stamp(seconds_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture()
def run_dir(tmp_path):
    """A completed run folder with a (stand-in) saved model."""
    d = tmp_path / "runs" / "r1"
    (d / "model").mkdir(parents=True)
    RunFolder(d).config_path.write_text("method: ga\nmodel: tiny\n")
    (RunFolder(d).model_dir / "config.json").write_text("{}")
    write_run(d, "completed")
    return d


@pytest.fixture()
def no_runner(monkeypatch):
    """Requests are written, but no runner is started to take them."""
    started = []
    monkeypatch.setattr(queue, "ensure_runner", lambda root=None, **kw: started.append(root))
    return started


def test_fraction_counts_parts_and_the_share_of_the_current_stage():
    assert stress_fraction({}) == 0.0
    assert stress_fraction({"done": 0, "total": 4}) == 0.0
    assert stress_fraction({"done": 2, "total": 4}) == 0.5
    assert stress_fraction({"done": 2, "total": 4, "stage_done": 5, "stage_total": 10}) == 0.625
    assert stress_fraction({"done": 4, "total": 4, "stage_done": 5, "stage_total": 10}) == 1.0
    assert stress_fraction({"done": 1, "total": 2, "stage_done": 50, "stage_total": 10}) == 1.0


def test_eta_from_elapsed_and_fraction_unknown_before_progress():
    assert stress_eta(None, 0.5) is None
    assert stress_eta(30.0, 0.0) is None  # no progress yet: "ETA unknown"
    assert stress_eta(30.0, 1.0) is None
    assert stress_eta(30.0, 0.25) == pytest.approx(90.0)


def test_progress_of_a_running_stress_test(run_dir):
    write_stress(run_dir, "running", pid=os.getpid(), started_at=stamp(60), done=0, total=4,
                 stage="starting", attacks=["quant8", "relearn"])
    p = stress_progress(run_dir)
    assert p["state"] == "running" and p["eta_s"] is None and p["eta_text"] == "ETA unknown"
    assert p["text"] == "stress test, part 1 of 4: starting"
    write_stress(run_dir, done=2, stage="quant8", stage_done=5, stage_total=10)
    p = stress_progress(run_dir)
    assert p["fraction"] == 0.625 and p["attacks"] == ["quant8", "relearn"]
    assert p["eta_s"] == pytest.approx(p["elapsed_s"] * 0.375 / 0.625, rel=0.05)
    assert 30 < p["eta_s"] < 40 and p["eta_text"].startswith("ETA 0m3")
    assert p["text"] == "stress test, part 3 of 4: quant8 5/10"


def test_progress_states_not_asked_queued_ended(run_dir):
    p = stress_progress(run_dir)
    assert p["state"] is None and p["text"] == "not stress-tested" and stress_state(run_dir) is None
    atomic_write_json(RunFolder(run_dir).stress_request_path,
                      {"attacks": ["quant4"], "settings": {}, "options": {}})
    p = stress_progress(run_dir)
    assert p["state"] == "queued" and p["attacks"] == ["quant4"] and p["eta_text"] == ""
    assert [r["stress_state"] for r in list_runs(run_dir.parent)] == ["queued"]
    RunFolder(run_dir).stress_request_path.unlink()
    write_stress(run_dir, "failed", started_at=stamp(20), ended_at=stamp(5), error="boom")
    p = stress_progress(run_dir)
    assert p["state"] == "failed" and p["error"] == "boom" and p["elapsed_s"] == 15
    assert p["eta_s"] is None and p["text"] == "stress test failed"


def test_a_running_record_whose_process_is_gone_is_failed(run_dir):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    write_stress(run_dir, "running", pid=proc.pid, started_at=stamp(5))
    p = stress_progress(run_dir)
    assert p["state"] == "failed" and "stress test process vanished" in p["error"]


def test_a_damaged_status_is_shown_damaged(run_dir):
    RunFolder(run_dir).stress_status_path.write_text('{"state": "running", "pid": "x"')
    assert stress_progress(run_dir)["state"] == "damaged"
    RunFolder(run_dir).stress_status_path.write_text('{"state": "running", "done": -1}')
    p = stress_progress(run_dir)
    assert p["state"] == "damaged" and "done" in p["error"]


def test_request_writes_the_marker_with_attacks_settings_options(run_dir, no_runner):
    shown = queue.request_stress(run_dir, "quant8,relearn", {"seeds": "0", "rouge": False},
                                 {"max_new_tokens": 4, "device": None, "bogus": 1})
    assert shown["state"] == "queued" and no_runner == [run_dir.parent]
    req = RunFolder(run_dir).stress_request()
    assert req["attacks"] == ["quant8", "relearn"]
    assert req["settings"] == {"seeds": [0], "rouge": False}  # typed, as the flags type them
    assert req["options"] == {"max_new_tokens": 4}
    assert json.loads(RunFolder(run_dir).stress_request_path.read_text())["requested_at"]
    with pytest.raises(ValueError, match="already queued"):
        queue.request_stress(run_dir, ["quant4"])
    # the default attacks are the stress command's
    assert queue.default_attacks() == ["relearn", "quant4", "quant8", "paraphrase",
                                       "fewshot", "roleplay"]


def test_what_refuses_a_request(run_dir, no_runner, tmp_path):
    with pytest.raises(ConfigError, match="unknown attack quant3"):
        queue.request_stress(run_dir, ["quant3"])
    with pytest.raises(ConfigError, match="relearn_share"):
        queue.request_stress(run_dir, ["quant4"], {"relearn_share": 2})
    write_stress(run_dir, "running", pid=os.getpid())
    with pytest.raises(ValueError, match="already running"):
        queue.request_stress(run_dir, ["quant4"])
    write_stress(run_dir, "completed")
    write_run(run_dir, "running", pid=os.getpid())
    with pytest.raises(ValueError, match="it is running: only a completed run"):
        queue.request_stress(run_dir, ["quant4"])
    write_run(run_dir, "completed")
    (RunFolder(run_dir).model_dir / "config.json").unlink()
    with pytest.raises(ValueError, match="no saved model"):
        queue.request_stress(run_dir, ["quant4"])
    assert not RunFolder(run_dir).stress_requested() and no_runner == []


def test_many_runs_queue_and_say_why_others_are_skipped(run_dir, no_runner):
    other = run_dir.parent / "r2"
    other.mkdir()
    RunFolder(other).config_path.write_text("method: ga\n")
    write_run(other, "completed")  # no model
    done = queue.queue_stress_tests([run_dir, other], ["quant8"])
    assert done == {"queued": ["r1"], "skipped": {"r2": "it has no saved model"}}
    with pytest.raises(ConfigError):  # attacks are checked once, before any run
        queue.queue_stress_tests([run_dir], ["nope"])


def test_candidates_are_evaluated_runs_with_a_model_and_no_test_in_progress(run_dir,
                                                                            no_runner):
    rows = [{"run_id": "r1", "path": str(run_dir), "run": "GA"},
            {"run_id": "orig", "run": "Original"}]
    ok, why = queue.stress_candidates(rows)
    assert ok == [] and why == {"r1": "it is not evaluated yet"}
    RunFolder(run_dir).eval_dir.mkdir()
    RunFolder(run_dir).summary_path.write_text("{}")
    assert queue.stress_candidates(rows) == (["r1"], {})
    queue.request_stress(run_dir, ["quant8"])
    assert queue.stress_candidates(rows) == ([], {"r1": "a stress test of it is already "
                                                        "queued"})


def test_the_retained_model_is_offered_and_measured_against_the_original(run_dir,
                                                                         no_runner):
    """The Original is the recovery's far end (never offered); the Retained model is (its
    relearning is the baseline), queued with the Original's model as its far end, since it
    was trained from the base model."""
    RunFolder(run_dir).eval_dir.mkdir()
    RunFolder(run_dir).summary_path.write_text("{}")
    rows = [{"run_id": "orig", "run": "Original", "path": "/somewhere/orig"},
            {"run_id": "r1", "path": str(run_dir), "run": "Retained"}]
    assert queue.stress_candidates(rows) == (["r1"], {})
    originals = queue.stress_originals(rows)
    assert originals == {"r1": str(RunFolder("/somewhere/orig").model_dir)}
    assert queue.stress_originals(rows[1:]) == {}  # no Original row: nothing to measure by
    done = queue.queue_stress_tests([run_dir], ["quant8"], options={"batch_size": 4},
                                    originals=originals)
    assert done == {"queued": ["r1"], "skipped": {}}
    assert RunFolder(run_dir).stress_request()["options"] == {  # and its own floor
        "batch_size": 4, "original": originals["r1"],
        "retained": str(RunFolder(run_dir).model_dir)}


def test_cancel_a_queued_one_drops_the_request(run_dir, no_runner):
    queue.request_stress(run_dir, ["quant8"])
    st = queue.cancel_stress(run_dir)
    assert st["state"] == "cancelled" and st["error"] == "cancelled before it started"
    assert st["attacks"] == ["quant8"] and not RunFolder(run_dir).stress_requested()
    # nothing queued or running: nothing changes
    assert queue.cancel_stress(run_dir)["state"] == "cancelled"


def test_cancel_a_running_one_signals_only_its_process(run_dir):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            start_new_session=True)
    try:
        write_stress(run_dir, "running", pid=proc.pid, started_at=stamp(1))
        st = queue.cancel_stress(run_dir)
        assert st.get("cancel_requested_at")
        assert proc.wait(timeout=20) == -15
        st = launch.finish_stress(run_dir, proc.returncode)
        assert st["state"] == "cancelled" and st["error"] == "cancelled by request"
    finally:
        proc.kill()
        proc.wait()


def test_a_process_that_dies_silently_is_failed_with_its_log(run_dir):
    RunFolder(run_dir).stress_log_path.write_text("loading\nTraceback: out of memory\n")
    write_stress(run_dir, "running", pid=os.getpid())
    st = launch.finish_stress(run_dir, -9)
    assert st["state"] == "failed" and st["exit_code"] == -9
    assert "killed by signal 9" in st["error"] and "out of memory" in st["error"]
    write_stress(run_dir, "completed", error=None)
    assert launch.finish_stress(run_dir, 0)["state"] == "completed"


def test_job_record_writes_only_once_it_holds_the_folder(run_dir):
    job = JobRecord(run_dir, ["quant8"])
    job.ended(RuntimeError("another stress test is writing there"))
    assert read_stress(run_dir) == {}  # a refused second process writes nothing
    job.started(["unlearned model", "quant8"])
    st = read_stress(run_dir)
    assert st["state"] == "running" and st["pid"] == os.getpid() and st["total"] == 2
    job.part(1)
    job.progress("quant8", 3, 10)
    job.wrote("quant8")
    st = read_stress(run_dir)
    assert (st["done"], st["stage"], st["stage_done"], st["stage_total"]) == (1, "quant8", 3, 10)
    assert st["results"] == ["quant8"]
    job.ended(KeyboardInterrupt())
    st = read_stress(run_dir)
    assert st["state"] == "cancelled" and st["error"] == "cancelled by request"
    job.ended(ValueError("bad"))
    assert read_stress(run_dir)["error"] == "ValueError: bad"
    job.ended()
    st = read_stress(run_dir)
    assert st["state"] == "completed" and st["done"] == 2 and st["error"] is None


def test_a_queued_stress_test_says_why_it_waits(run_dir, no_runner):
    # a new user's stress test sat "queued" for minutes with no reason given
    import fcntl

    from sga_core.runs.runner import Runner

    queue.request_stress(run_dir, "quant8")
    assert stress_progress(run_dir)["text"].startswith("stress test queued (no queue runner")
    root = run_dir.parent
    with open(root / queue.RUNNER_LOCK, "a") as lock:  # a runner serves the queue
        fcntl.flock(lock, fcntl.LOCK_EX)
        runner = Runner(root, max_parallel=1)
        other = root / "busy"
        other.mkdir()
        runner.evals[other] = object()
        runner.say_slots()
        assert stress_progress(run_dir)["text"] == (
            "stress test queued (waiting for a free slot: 1 of 1 in use by busy "
            "(evaluation))")
        del runner.evals[other]
        runner.say_slots()
        assert stress_progress(run_dir)["text"] == "stress test queued (starting)"


def test_a_stress_process_stops_once_its_record_says_it_ended(run_dir):
    """A SLURM stress job cancelled 1 s after its start left its process running for 30
    minutes under a "cancelled" record (its job script died, and a cluster that tracks
    processes by parent lost it): the process now checks its record at each progress."""
    from sga_core.evaluation.common import EvalCancelled

    job = JobRecord(run_dir, ["relearn"])
    job.started(["unlearned model", "relearn"])
    job.progress("relearning: training", 1, 100)  # running: it goes on
    write_stress(run_dir, "failed", slurm_state_final="UNKNOWN")  # only inferred: goes on
    job.last["t"] = 0.0
    job.progress("relearning: training", 2, 100)
    write_stress(run_dir, "cancelled", slurm_state_final="CANCELLED")
    job.last["t"] = 0.0
    with pytest.raises(EvalCancelled, match="cancelled or ended"):
        job.progress("relearning: training", 3, 100)
    write_stress(run_dir, "running", cancel_requested_at="2026-11-27T17:14:25Z")
    job.last["t"] = 0.0
    with pytest.raises(EvalCancelled):
        job.progress("relearning: training", 4, 100)


def test_the_command_the_runner_starts():
    argv = launch.stress_argv("/runs/r1", ["quant8", "relearn"],
                              {"seeds": [0, 1], "rouge": False, "keep": True,
                               "relearn_lr": None, "relearn_steps": "5"},
                              {"max_new_tokens": 4, "junk": 1})
    assert argv == ["python", "-m", "sga_core", "stress", "/runs/r1", "--attacks",
                    "quant8,relearn", "--seeds", "0,1", "--no-rouge", "--keep",
                    "--relearn-steps", "5", "--max-new-tokens", "4"]


def test_the_runner_skips_a_request_cancelled_before_it_read_it(run_dir):
    from sga_core.runs.runner import Runner

    runner = Runner(run_dir.parent)
    runner.launch_stress(run_dir)  # no marker (dropped by a cancel): nothing starts
    assert runner.stresses == {} and read_stress(run_dir) == {}
