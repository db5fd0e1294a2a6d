"""Reading SLURM's answers (sga_core.runs.slurm.client, states): a wrong or missing answer
never fails a run for good, output that is not UTF-8 never breaks a reader, a hanging squeue
holds no lock and is not asked again at once, and a job id that is not one (``--me``) never
reaches a tool. SLURM's tools are stubs here (tests/helpers/slurm_stub.py): a real cluster
does not give these answers on demand; tests/e2e/test_slurm_false_states.py has the real
one."""

from __future__ import annotations

import threading
import time

import pytest

from sga_core.runs import status as run_status
from sga_core.runs.slurm import client, states
from sga_core.runs.slurm.client import JobTable, SlurmError
from tests.helpers.slurm import wait_for
from tests.helpers.slurm_stub import StubSlurm, squeue_line

JOB = "4242"


@pytest.fixture()
def stub(tmp_path, monkeypatch):
    """SLURM's tools as stubs first on PATH, and a fresh job table that asks each time."""
    s = StubSlurm(tmp_path / "bin")
    monkeypatch.setenv("PATH", s.env()["PATH"])
    monkeypatch.setattr(states, "TABLE", JobTable(ttl=0))
    monkeypatch.setattr(client, "TABLE", states.TABLE)
    return s


def slurm_run(tmp_path, name: str = "r1", state: str = "queued", **fields):
    run_dir = tmp_path / "runs" / name
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text("{}\n")
    run_status.write_run(run_dir, state, backend="slurm", slurm_job_id=JOB,
                         slurm_submitted_at="2026-11-24T08:00:00Z", **fields)
    return run_dir


#: squeue answers that say nothing true about the job; each once made a pending run failed
WRONG_ANSWERS = {
    "empty": {"out": b""},
    "blank lines": {"out": b"\n\n  \n"},
    "garbage": {"out": b"<html>502 Bad Gateway</html>\n"},
    "stderr only": {"out": b"", "err": b"squeue: error: slurm_receive_msg: Socket timed out\n"},
    "NUL bytes": {"out": b"\0\0\0\0\n"},
    "NUL in the state": {"out": f"{JOB}|PEN\0DING|None|(null)|x|N/A|N/A\n".encode()},
    "cut-off line": {"out": f"{JOB}|PENDING\n".encode()},
    "other user's jobs": {"out": squeue_line("77", "RUNNING")},
}


@pytest.mark.parametrize("answer", list(WRONG_ANSWERS))
def test_a_wrong_squeue_answer_never_fails_a_pending_run(stub, tmp_path, answer):
    run_dir = slurm_run(tmp_path)
    stub.answer("squeue", **WRONG_ANSWERS[answer])
    if answer in ("stderr only", "garbage", "NUL bytes", "NUL in the state", "cut-off line"):
        states.TABLE.refresh()
        assert states.TABLE.error and not states.TABLE.jobs  # a problem, never "no jobs"
    for _ in range(4):  # answers in a row, inside the time it takes to call a job gone
        shown = run_status.effective_run(run_dir)
        assert shown["state"] == "queued", shown
        assert shown.get("slurm_problem"), shown  # the doubt is said, not hidden
    written = run_status.read_run(run_dir)
    assert written["state"] == "queued" and not written.get("slurm_state_final"), written
    # and the job, listed again, is shown as SLURM has it; the count starts afresh
    stub.answer("squeue", out=squeue_line(JOB, "PENDING", "Resources"))
    states.TABLE.forget()  # (a failing squeue is asked again only after a wait)
    shown = run_status.effective_run(run_dir)
    assert (shown["state"], shown["slurm_reason"]) == ("queued", "waiting for resources")
    assert not run_status.read_run(run_dir).get("slurm_unseen")


def test_a_job_missing_from_enough_answers_over_time_is_gone(stub, tmp_path, monkeypatch):
    """Only several answers over at least GONE_S seconds make a job gone; then the run is
    failed, recorded as the workbench's inference (UNKNOWN), not SLURM's verdict."""
    monkeypatch.setattr(states, "GONE_S", 0.0)
    run_dir = slurm_run(tmp_path, state="running", slurm_started_at="2026-11-24T08:00:09Z")
    stub.answer("squeue", out=b"")
    seen = [run_status.effective_run(run_dir)["state"] for _ in range(states.GONE_ANSWERS)]
    assert seen[:-1] == ["running"] * (states.GONE_ANSWERS - 1) and seen[-1] == "failed"
    written = run_status.read_run(run_dir)
    assert written["state"] == "failed" and written["slurm_state_final"] == "UNKNOWN"
    assert f"SLURM no longer knows job {JOB}" in written["error"]


def test_a_job_left_out_by_user_is_asked_for_by_its_id(stub, tmp_path):
    """The user's table leaves the job out (another user's job in a shared runs folder, a
    wrong $USER); asked by id, SLURM has it pending: queued, and nothing is counted."""
    run_dir = slurm_run(tmp_path)
    # the stub gives one answer to both; a table without the job, then one with it
    stub.answer("squeue", out=b"")
    table = states.TABLE
    table.refresh()
    assert JOB not in table.jobs
    stub.answer("squeue", out=squeue_line(JOB, "PENDING", "Priority"))
    table.ttl = 3600  # the user's table is not asked again; the id is
    shown = run_status.effective_run(run_dir)
    assert (shown["state"], shown["slurm_reason"]) == ("queued",
                                                      "waiting for higher-priority jobs")
    assert ["-j", JOB] == [a for a in stub.calls("squeue")[-1] if a in ("-j", JOB)]


def test_squeue_is_asked_by_uid_not_by_the_user_name(stub, tmp_path, monkeypatch):
    import os

    monkeypatch.setenv("USER", "nobody")
    monkeypatch.setenv("LOGNAME", "nobody")
    stub.answer("squeue", out=squeue_line(JOB, "PENDING"))
    run_status.effective_run(slurm_run(tmp_path))
    first = stub.calls("squeue")[0]
    assert first[first.index("-u") + 1] == str(os.getuid())
    assert "nobody" not in [a for call in stub.calls() for a in call]


def test_an_inferred_failure_gives_way_to_a_job_slurm_still_has(stub, tmp_path):
    """A run an older workbench marked failed (UNKNOWN) while its job was pending: shown
    queued while SLURM lists the job, and ``runs cancel`` still cancels it."""
    from sga_core.runs import queue

    run_dir = slurm_run(tmp_path, state="failed", slurm_state_final="UNKNOWN",
                        slurm_reason="unknown to SLURM",
                        error=f"SLURM no longer knows job {JOB}: it ended without its run "
                              "finishing (see slurm.log)")
    stub.answer("squeue", out=squeue_line(JOB, "PENDING", "Resources"))
    shown = run_status.effective_run(run_dir)
    assert (shown["state"], shown["slurm_reason"], shown.get("error")) == \
        ("queued", "waiting for resources", None)
    st = queue.cancel(run_dir)
    assert [JOB] == stub.calls("scancel")[-1][1:]
    assert st["state"] == "cancelled"
    # a failure SLURM itself gave is final: it is never looked up again
    done = slurm_run(tmp_path, "r2", state="failed", slurm_state_final="TIMEOUT",
                     error="time limit")
    before = len(stub.calls("squeue"))
    assert run_status.effective_run(done)["state"] == "failed"
    assert len(stub.calls("squeue")) == before


# --- output that is not UTF-8; a squeue that hangs -------------------------------------------

def test_output_that_is_not_utf8_is_decoded_with_replacement(stub, tmp_path):
    run_dir = slurm_run(tmp_path)
    stub.answer("squeue", out=squeue_line(JOB, "PENDING", "@").replace(b"@", b"caf\xe9"))
    shown = run_status.effective_run(run_dir)
    assert shown["state"] == "queued" and shown["slurm_reason"] == "waiting (caf\ufffd)"
    stub.answer("scancel", err=b"scancel: error: caf\xe9 \xff\n", rc=1)
    with pytest.raises(SlurmError, match="caf\ufffd"):
        client.scancel(JOB)


def test_a_hanging_squeue_holds_no_lock_and_is_not_asked_again_at_once(stub, monkeypatch):
    monkeypatch.setattr(client, "READ_TIMEOUT_S", 30.0)
    table = states.TABLE
    table.ttl = 0.0
    stub.answer("squeue", out=squeue_line(JOB, "PENDING"))
    assert table.lookup(JOB).job["state"] == "PENDING"
    stub.hang("squeue")
    asking = threading.Thread(target=table.lookup, args=(JOB,), daemon=True)
    asking.start()
    wait_for(lambda: table.busy, 30, "squeue to be under way")
    got = []
    reader = threading.Thread(target=lambda: got.append(table.lookup(JOB)), daemon=True)
    reader.start()
    wait_for(lambda: got, 20, "a second reader served while squeue hangs")
    assert asking.is_alive()  # squeue still has not answered
    assert got[0].job["state"] == "PENDING" and got[0].problem is None  # the last answer
    stub.release("squeue")
    asking.join(30)


def test_a_squeue_that_times_out_is_backed_off(stub, monkeypatch):
    monkeypatch.setattr(client, "READ_TIMEOUT_S", 0.5)
    table = states.TABLE
    table.ttl = 0.0
    stub.hang("squeue")
    seen = table.lookup(JOB)
    assert seen.job is None and "no answer" in seen.problem
    calls = len(stub.calls("squeue"))
    for _ in range(5):  # the pages read again at once: served the failure, not asked
        assert "no answer" in table.lookup(JOB).problem
    assert len(stub.calls("squeue")) == calls
    assert table.next_try_at() > table.asked_at
    stub.release("squeue")


# --- job ids -----------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["--me", "-u", "-uroot", "1 2", "1,2", "1\n2", "１２",
                                 "", "12_", "_3", "1_2_3", " 12", "12 ", None, 12])
def test_only_job_ids_reach_a_tool(stub, bad):
    with pytest.raises(SlurmError, match="not a SLURM job id"):
        client.scancel(bad)
    assert states.TABLE.lookup(bad).problem
    assert stub.calls() == []


def test_valid_job_ids_pass(stub):
    client.scancel("12", "34_5")
    assert stub.calls("scancel") == [["scancel", "12", "34_5"]]


def test_sbatch_answers_that_are_not_job_ids_are_refused(stub, tmp_path):
    stub.answer("sbatch", out=b"--me\n")
    with pytest.raises(SlurmError, match="not a SLURM job id"):
        client.sbatch(str(tmp_path / "x.sh"))
    stub.answer("sbatch", out=b"123;cluster\n")
    assert client.sbatch(str(tmp_path / "x.sh")) == "123"


@pytest.mark.parametrize("kind", ["run", "stress", "eval"])
def test_a_status_file_with_an_option_for_a_job_id_cancels_nothing(stub, tmp_path, kind):
    """``slurm_job_id: --me`` in status.json, eval/status.json or stress_status.json is
    damage: the status reader names it, and no cancel passes it to scancel."""
    from sga_core.runs import queue

    run_dir = slurm_run(tmp_path, state="completed")
    status = {"run": run_status.write_run, "eval": run_status.write_eval,
              "stress": run_status.write_stress}[kind]
    status(run_dir, "queued" if kind != "run" else "running", slurm_job_id="--me")
    read = {"run": run_status.read_run, "eval": run_status.read_eval,
            "stress": run_status.read_stress}[kind](run_dir)
    assert read["state"] == "damaged" and "slurm_job_id" in read["damaged"], read
    cancel = {"run": queue.cancel, "eval": queue.cancel_eval, "stress": queue.cancel_stress}
    try:
        cancel[kind](run_dir)
    except (SlurmError, RuntimeError) as exc:  # a clear refusal is fine; a cancel is not
        assert "--me" not in str(exc) or "not a SLURM job id" in str(exc)
    assert all("--me" not in call for call in stub.calls()), stub.calls()
    time.sleep(0)  # (no wait: nothing runs in the background)


def test_ended_runs_whose_jobs_slurm_forgot_cost_no_call_each(stub, tmp_path):
    """Old runs that ended on their own, and runs settled by inference, are looked up in
    the one table answer only: no ``squeue -j`` per run (the controller is shared)."""
    for n in range(5):
        slurm_run(tmp_path, f"done{n}", state="completed")
        slurm_run(tmp_path, f"gone{n}", state="failed", slurm_state_final="UNKNOWN")
    stub.answer("squeue", out=squeue_line("9", "RUNNING"))
    states.TABLE.ttl = 3600
    from sga_core.runs.listing import list_runs

    rows = list_runs(tmp_path / "runs")
    assert sorted(r["state"] for r in rows) == ["completed"] * 5 + ["failed"] * 5
    assert len(stub.calls("squeue")) == 1 and not stub.calls("sacct"), stub.calls()


# --- where the miss count and the inference meet a new job --------------------------------------

def test_a_job_started_after_an_inferred_failure_counts_its_misses_afresh(stub, tmp_path,
                                                                        monkeypatch):
    """An evaluation or stress job writes "running" itself (only a training job's `job
    start` clears the inference): a record "running" with the stale UNKNOWN and a spent miss
    count is looked up as usual, and one miss does not fail it."""
    monkeypatch.setattr(states, "GONE_S", 0.0)
    run_dir = slurm_run(tmp_path, state="running", slurm_state_final="UNKNOWN",
                        slurm_started_at="2026-11-24T08:00:09Z", slurm_unseen=7,
                        slurm_unseen_since=1.0, slurm_unseen_at=2.0)
    stub.answer("squeue", out=squeue_line(JOB, "RUNNING"))
    shown = run_status.effective_run(run_dir)
    assert shown["state"] == "running" and not shown.get("slurm_state_final"), shown
    stub.answer("squeue", out=b"")  # one miss: a doubt, not an end
    shown = run_status.effective_run(run_dir)
    assert shown["state"] == "running" and shown.get("slurm_problem"), shown
    assert run_status.read_run(run_dir)["slurm_unseen"] == 1


def test_a_new_evaluation_job_starts_with_no_misses(stub, tmp_path, monkeypatch):
    """Re-evaluating after an evaluation job was inferred gone: the new job's status has
    none of the old job's misses, so its first miss is only a doubt."""
    from sga_core.runs.slurm import backend
    from sga_core.runs.slurm.profile import ClusterProfile

    run_dir = slurm_run(tmp_path, state="completed")
    run_status.write_eval(run_dir, "failed", slurm_job_id="17", slurm_state_final="UNKNOWN",
                          slurm_unseen=5, slurm_unseen_since=1.0, slurm_unseen_at=2.0)
    stub.answer("sbatch", out=f"{JOB}\n".encode())
    import sga_core.runs.launch as launch
    monkeypatch.setattr(launch, "eval_argv", lambda *a, **k: ["python", "-c", "pass"])
    backend.submit_eval(run_dir, profile=ClusterProfile())
    written = run_status.read_eval(run_dir)
    assert written["state"] == "queued" and written["slurm_job_id"] == JOB
    assert all(written.get(k) is None for k in states.UNSEEN_FIELDS), written


def test_a_run_only_inferred_gone_is_not_resumed_until_cancelled(stub, tmp_path):
    """SLURM may still hold the job of a run the workbench only inferred gone: resuming it
    would train twice in one folder, so Resume says to cancel first."""
    from sga_core.runs import launch

    run_dir = slurm_run(tmp_path, state="failed", slurm_state_final="UNKNOWN",
                        error=f"SLURM no longer knows job {JOB}")
    stub.answer("squeue", out=b"")
    with pytest.raises(ValueError, match="cancel the run first"):
        launch.request_resume(run_dir, "queue")
    assert run_status.read_run(run_dir)["state"] == "failed"
