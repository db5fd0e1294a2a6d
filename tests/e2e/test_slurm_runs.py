"""Runs sent to a real one-node SLURM cluster (tests/helpers/slurm.py: Debian's slurm-wlm and
munge, started by the ``slurm_cluster`` fixture), from the CLI: a tiny run completes and is
evaluated like a local run, a sweep over seeds is one throttled job array, cancels (pending
and running), SLURM's time limit, a refused partition, and no SLURM at all
(docs/slurm.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sga_core.fileio import atomic_write_jsonl
from sga_core.runs import status as run_status
from sga_core.runs.folder import SLURM_ARRAY_SCRIPT, SLURM_EVAL_SCRIPT, SLURM_SCRIPT
from sga_core.runs.listing import list_runs
from sga_core.runs.slurm.client import TABLE
from sga_core.runs.slurm.profile import ClusterProfile, save_profile
from tests.helpers.cli import sga_cli
from tests.helpers.slurm import wait_for

pytestmark = pytest.mark.slow
DEMO = Path(__file__).resolve().parents[2] / "assets" / "demo"
LIVE = ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING")


@pytest.fixture()
def setup(tmp_path, tiny_model_dir, monkeypatch):
    return make_setup(tmp_path, tiny_model_dir, monkeypatch)


def make_setup(tmp_path, tiny_model_dir, monkeypatch) -> dict:
    """A workspace whose profile fits the one-node cluster, small data, a fast evaluation."""
    monkeypatch.setenv("SGA_SLURM_TTL", "1")
    TABLE.ttl = 1.0
    ws = tmp_path / "ws"
    monkeypatch.setenv("SGA_WORKSPACE", str(ws))  # the workspace the app would serve
    save_profile(ClusterProfile(cpus=1, time_limit="15", max_jobs=2), ws)
    data = tmp_path / "data"
    data.mkdir()
    for name in ("forget", "retain"):
        rows = [json.loads(line) for line in (DEMO / f"{name}.jsonl").read_text().splitlines()]
        atomic_write_jsonl(data / f"{name}.jsonl", rows[:6])
    preset = tmp_path / "preset.yaml"
    preset.write_text("eval:\n  max_new_tokens: 2\n  max_retain_rows: 4\n")
    runs = tmp_path / "runs"
    base = ["train", "--backend", "slurm", "--workspace", str(ws), "--runs-dir", str(runs),
            "--model", str(tiny_model_dir), "--method", "sga", "--preset", str(preset),
            "--forget", str(data / "forget.jsonl"), "--retain", str(data / "retain.jsonl"),
            "--batch-size", "2", "--device", "cpu"]
    return {"ws": ws, "runs": runs, "train": base, "tmp": tmp_path}


def submit(setup, *args: str) -> list[Path]:
    out = sga_cli(*setup["train"], *args, timeout=600)
    assert out.returncode == 0, out.stderr
    return [Path(line.split(":", 1)[1].strip()) for line in out.stdout.splitlines()
            if line.startswith("run folder:")]


def shown(run_dir: Path) -> dict:
    return run_status.run_view(run_dir)


def wait_state(run_dir: Path, states: tuple[str, ...], timeout: float) -> dict:
    return wait_for(lambda: (st := shown(run_dir))["state"] in states and st, timeout,
                    f"{run_dir.name} to be {'/'.join(states)} (now {shown(run_dir)})",
                    interval=1.0)


def test_a_cli_run_on_slurm_completes_evaluated_like_a_local_run(slurm, setup):
    (run_dir,) = submit(setup, "--max-steps", "2")
    assert (run_dir / SLURM_SCRIPT).exists() and (run_dir / "command.sh").exists()
    assert 'bash "$RUN_DIR/command.sh"' in (run_dir / SLURM_SCRIPT).read_text()
    st = wait_for(lambda: (v := shown(run_dir))["eval_state"] in ("completed", "failed")
                  and v, 600, "the run trained and evaluated", interval=2.0)
    assert (st["state"], st["eval_state"]) == ("completed", "completed"), st
    assert st["slurm_node"] == slurm.node and st["slurm_wait_s"] >= 0
    assert st["slurm_job_id"].isdigit()
    row = next(r for r in list_runs(setup["runs"]) if r["run_id"] == run_dir.name)
    assert (row["state"], row["eval_state"], row["step"]) == ("completed", "completed", 2)
    assert (run_dir / "eval" / "summary.json").exists()
    out = sga_cli("runs", "show", run_dir.name, "--runs-dir", str(setup["runs"]))
    assert f'"slurm_node": "{slurm.node}"' in out.stdout


def test_re_evaluating_a_slurm_run_is_a_slurm_job_of_its_own(slurm, setup):
    """The Results page's re-evaluation (queue.request_eval) of a run trained on SLURM goes
    to SLURM, not to this machine's queue."""
    from sga_core.runs import queue

    (run_dir,) = submit(setup, "--max-steps", "1", "--no-eval")
    run = wait_state(run_dir, ("completed",), 600)
    assert not (run_dir / "eval" / "summary.json").exists()
    queue.request_eval(run_dir)
    ev = run_status.effective_eval(run_dir)
    assert ev["state"] in ("queued", "running") and ev["slurm_job_id"] != run["slurm_job_id"]
    assert "python -m sga_core eval" in (run_dir / SLURM_EVAL_SCRIPT).read_text()
    assert not queue.eval_requested(run_dir)  # nothing left for a local runner
    ev = wait_for(lambda: (v := run_status.effective_eval(run_dir))["state"]
                  in run_status.FINAL_STATES and v, 600, "the evaluation job", interval=2.0)
    assert ev["state"] == "completed", ev
    assert (run_dir / "eval" / "summary.json").exists()


def test_a_separate_evaluation_is_a_job_held_until_the_training_ends_well(slurm, setup):
    """``eval.in_process: false``: the evaluation is its own job, submitted with the
    training's (``--dependency=afterok``); it shows "held by a dependency" until the training
    completes, then runs and completes; the training's job does not evaluate."""
    preset = setup["tmp"] / "separate.yaml"
    preset.write_text("eval:\n  max_new_tokens: 2\n  max_retain_rows: 4\n  in_process: false\n")
    (run_dir,) = submit(setup, "--max-steps", "1", "--preset", str(preset))
    run, ev = run_status.read_run(run_dir), run_status.read_eval(run_dir)
    assert ev["state"] == "queued" and ev["slurm_job_id"] != run["slurm_job_id"]
    assert (run_dir / SLURM_EVAL_SCRIPT).exists()
    deps = slurm.run("squeue", "-h", "-j", ev["slurm_job_id"], "-o", "%E").strip()
    assert deps.startswith(f"afterok:{run['slurm_job_id']}"), deps
    held = wait_for(lambda: (v := run_status.effective_eval(run_dir)).get("slurm_reason")
                    == "held by a dependency" and v, 120, "the evaluation held by SLURM")
    assert held["state"] == "queued"
    ev = wait_for(lambda: (v := run_status.effective_eval(run_dir))["state"]
                  in run_status.FINAL_STATES and v, 600, "the evaluation job", interval=2.0)
    assert ev["state"] == "completed", ev
    assert shown(run_dir)["state"] == "completed"
    assert "[job] evaluation" not in (run_dir / "slurm.log").read_text()  # not in-job


def test_cancelling_a_pending_run_cancels_its_held_evaluation(slurm, setup):
    blocker = slurm.run("sbatch", "--parsable", "-c", str(slurm.cpus), "-o", "/dev/null",
                        "--wrap", "sleep 600").strip()
    wait_for(lambda: any(j["id"] == blocker and j["state"] == "RUNNING"
                         for j in slurm.jobs()), 120, "the blocking job to run")
    preset = setup["tmp"] / "separate.yaml"
    preset.write_text("eval:\n  in_process: false\n")
    (run_dir,) = submit(setup, "--max-steps", "1", "--preset", str(preset))
    eval_job = run_status.read_eval(run_dir)["slurm_job_id"]
    out = sga_cli("runs", "cancel", run_dir.name, "--runs-dir", str(setup["runs"]))
    assert out.returncode == 0, out.stdout + out.stderr
    slurm.run("scancel", blocker)
    wait_for(lambda: all(j["state"] not in LIVE for j in slurm.jobs()), 120,
             "every job to end")
    assert next(j for j in slurm.jobs() if j["id"] == eval_job)["state"] == "CANCELLED"
    assert run_status.effective_eval(run_dir)["state"] == "cancelled"
    assert shown(run_dir)["state"] == "cancelled"


def test_a_sweep_over_two_seeds_is_one_job_array_two_at_a_time(slurm, setup):
    runs = submit(setup, "--sweep-values", "-0.8, 0, 0.4", "--seeds", "2", "--max-steps", "1",
                  "--no-eval")
    assert len(runs) == 6
    ids = [run_status.read_run(d)["slurm_job_id"] for d in runs]
    assert len({i.split("_")[0] for i in ids}) == 1  # one array
    assert sorted(int(i.split("_")[1]) for i in ids) == list(range(6))
    assert "#SBATCH --array=0-5%2" in (runs[0] / SLURM_ARRAY_SCRIPT).read_text()
    most = 0

    def all_done():
        nonlocal most
        most = max(most, sum(j["state"] == "RUNNING" for j in slurm.jobs()))
        return all(shown(d)["state"] in run_status.FINAL_STATES for d in runs)

    wait_for(all_done, 900, "the six array tasks to end", interval=1.0)
    assert [shown(d)["state"] for d in runs] == ["completed"] * 6
    assert 1 <= most <= 2
    # what the runs themselves recorded: never more than two training at once
    spans = [(run_status.read_run(d)["slurm_started_at"], run_status.read_run(d)["ended_at"])
             for d in runs]
    assert max(sum(s <= t < e for s, e in spans) for t, _ in spans) <= 2


def test_a_run_cancelled_while_pending_never_starts(slurm, setup):
    blocker = slurm.run("sbatch", "--parsable", "-c", str(slurm.cpus), "-o", "/dev/null",
                        "--wrap", "sleep 600").strip()
    wait_for(lambda: any(j["id"] == blocker and j["state"] == "RUNNING"
                         for j in slurm.jobs()), 120, "the blocking job to run")
    (run_dir,) = submit(setup, "--max-steps", "2")
    st = wait_for(lambda: (v := shown(run_dir)).get("slurm_reason") == "waiting for "
                  "resources" and v, 120, "SLURM's pending reason: resources")
    assert st["state"] == "queued"
    out = sga_cli("runs", "cancel", run_dir.name, "--runs-dir", str(setup["runs"]))
    assert out.returncode == 0 and "cancelled" in out.stdout, out.stdout + out.stderr
    slurm.run("scancel", blocker)
    jid = run_status.read_run(run_dir)["slurm_job_id"]
    wait_for(lambda: all(j["state"] not in LIVE for j in slurm.jobs()), 120,
             "every job to end")
    assert next(j for j in slurm.jobs() if j["id"] == jid)["state"] == "CANCELLED"
    st = shown(run_dir)
    assert (st["state"], st["error"]) == ("cancelled", "cancelled before it started")
    assert not (run_dir / "train.log").exists() and not st.get("slurm_started_at")


def test_a_run_cancelled_while_running_stops(slurm, setup):
    (run_dir,) = submit(setup, "--max-steps", "100000", "--no-eval")
    wait_for(lambda: shown(run_dir).get("step"), 300, "the first training step", interval=1)
    out = sga_cli("runs", "cancel", run_dir.name, "--runs-dir", str(setup["runs"]))
    assert out.returncode == 0, out.stderr
    st = wait_state(run_dir, run_status.FINAL_STATES, 60)
    assert st["state"] == "cancelled", st
    jid = st["slurm_job_id"]
    wait_for(lambda: all(j["state"] not in LIVE for j in slurm.jobs() if j["id"] == jid), 60,
             "the job to end")


def test_slurms_time_limit_shows_as_failed_with_its_reason_within_30_s(slurm, setup):
    save_profile(ClusterProfile(cpus=1, time_limit="1"), setup["ws"])
    (run_dir,) = submit(setup, "--max-steps", "1000000", "--no-eval")
    jid = run_status.read_run(run_dir)["slurm_job_id"]
    wait_state(run_dir, ("running",), 300)
    wait_for(lambda: any(j["id"] == jid and j["state"] == "TIMEOUT" for j in slurm.jobs()),
             240, "SLURM to end the job at its time limit", interval=1.0)
    ended = time.monotonic()
    st = wait_state(run_dir, run_status.FINAL_STATES, 30)
    assert time.monotonic() - ended <= 30
    assert st["state"] == "failed" and "time limit" in st["error"], st
    # recorded, so the run reads the same once SLURM forgets the job
    assert "time limit" in run_status.read_run(run_dir)["error"]


def test_a_node_whose_daemon_stops_mid_run_shows_node_failure_within_30_s(slurm, setup):
    """The node dies: its slurmd stops and the training with it. SLURM declares the node
    down after its SlurmdTimeout and ends the job as NODE_FAIL; the run says so."""
    (run_dir,) = submit(setup, "--max-steps", "1000000", "--no-eval")
    jid = run_status.read_run(run_dir)["slurm_job_id"]
    st = wait_for(lambda: (v := shown(run_dir)).get("step") and v.get("pid") and v, 300,
                  "the first training step", interval=1.0)
    slurm.stop_slurmd()
    try:
        slurm.kill_job_processes(st["pid"])  # the node's processes go with it
        wait_for(lambda: any(j["id"] == jid and j["state"] == "NODE_FAIL"
                             for j in slurm.jobs()), 300,
                 "SLURM to end the job as NODE_FAIL", interval=1.0)
        ended = time.monotonic()
        st = wait_state(run_dir, run_status.FINAL_STATES, 30)
        assert time.monotonic() - ended <= 30
        assert st["state"] == "failed" and "node" in st["error"], st
    finally:
        slurm.start_slurmd(300)


def test_a_bad_partition_is_sbatchs_one_line_and_leaves_no_run_folder(slurm, setup):
    save_profile(ClusterProfile(cpus=1, partition="nope"), setup["ws"])
    out = sga_cli(*setup["train"], "--max-steps", "1")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "invalid partition" in lines[0].lower(), out.stderr
    assert not setup["runs"].exists() or list(setup["runs"].iterdir()) == []


def test_without_sbatch_only_the_local_backend_is_offered(setup, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {"PATH": str(empty)}
    out = sga_cli("cluster", "show", "--workspace", str(setup["ws"]), env=env)
    assert out.returncode == 0 and "not offered: sbatch" in out.stdout
    out = sga_cli(*setup["train"], "--max-steps", "1", env=env)
    assert out.returncode == 2 and "SLURM is not available" in out.stderr
    assert not setup["runs"].exists() or list(setup["runs"].iterdir()) == []


def test_prepare_sends_the_reference_then_the_original_to_slurm(slurm, setup):
    """``prepare --backend slurm``: both fine-tunings are run folders with slurm.sh, each a
    job of its own; the original's is held until the reference's ended well, then both
    complete."""
    out = sga_cli("prepare", "--backend", "slurm", "--workspace", str(setup["ws"]),
                  "--runs-dir", str(setup["runs"]), "--model", setup["train"][8],
                  "--forget", str(setup["tmp"] / "data" / "forget.jsonl"),
                  "--retain", str(setup["tmp"] / "data" / "retain.jsonl"),
                  "--name", "p", "--max-steps", "1", "--batch-size", "2", "--device", "cpu",
                  "--no-eval", timeout=600)
    assert out.returncode == 0, out.stderr
    ref, orig = setup["runs"] / "p-retain-ref", setup["runs"] / "p-original"
    ids = {d: run_status.read_run(d)["slurm_job_id"] for d in (ref, orig)}
    for d in (ref, orig):
        assert (d / SLURM_SCRIPT).exists() and (d / "command.sh").exists()
        assert ids[d] in out.stdout
    queued = {j["id"] for j in slurm.jobs()}
    assert ids[orig] in queued  # held by its dependency until the reference ended well
    deps = slurm.run("squeue", "-h", "-j", ids[orig], "-o", "%E").strip()
    assert deps.startswith(f"afterok:{ids[ref]}"), deps
    for d in (ref, orig):
        assert wait_state(d, run_status.FINAL_STATES, 600)["state"] == "completed"
    spans = {d: run_status.read_run(d) for d in (ref, orig)}
    assert spans[ref]["ended_at"] <= spans[orig]["slurm_started_at"]


def test_the_paper_table_bench_submits_its_runs_as_one_job_array(slurm, setup, tiny_model_dir):
    """``bench/paper_table.py --backend slurm``: the table's runs are one job array (the
    profile's throttle) and the command returns at once, pointing at ``--report``."""
    import os
    import shutil
    import subprocess
    import sys

    from sga_core.projects import create_demo_project

    root = Path(__file__).resolve().parents[2]
    create_demo_project(root=setup["ws"])
    shutil.copytree(tiny_model_dir, setup["runs"] / "demo-original" / "model")  # prepared
    env = {**os.environ, "PYTHONPATH": str(root), "SGA_WORKSPACE": str(setup["ws"]),
           "SGA_RUNS_DIR": str(setup["runs"])}
    out = subprocess.run([sys.executable, str(root / "bench" / "paper_table.py"), "--backend",
                          "slurm", "--methods", "ga,sga", "--r", "-0.8", "--max-steps", "1"],
                         env=env, capture_output=True, text=True, timeout=600,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert "submitted=2 group=paper-table-" in out.stdout and "--report" in out.stdout
    runs = [r for r in list_runs(setup["runs"]) if r["run_id"] != "demo-original"]
    assert len(runs) == 2 and len({r["sweep"] for r in runs}) == 1
    ids = sorted(run_status.read_run(r["path"])["slurm_job_id"] for r in runs)
    array = ids[0].split("_")[0]
    assert ids == [f"{array}_0", f"{array}_1"]
    assert {j["id"] for j in slurm.jobs()} >= set(ids)
    (script,) = [Path(r["path"]) / SLURM_ARRAY_SCRIPT for r in runs
                 if (Path(r["path"]) / SLURM_ARRAY_SCRIPT).exists()]
    assert "#SBATCH --array=0-1%2" in script.read_text()


def test_a_stress_test_of_a_slurm_run_is_a_slurm_job_of_its_own(slurm, setup):
    """The Runs page's Stress-test (queue.request_stress) of a run trained on SLURM goes to
    SLURM as slurm-stress.sh, not to this machine's queue, and completes with its result
    file and its status, which the job's stress process wrote."""
    from sga_core.runs import queue
    from sga_core.runs.folder import RunFolder

    (run_dir,) = submit(setup, "--max-steps", "1", "--no-eval")
    run = wait_state(run_dir, ("completed",), 600)
    sst = queue.request_stress(run_dir, ["quant8"], {"rouge": False})
    assert sst["state"] in ("queued", "running") and sst["slurm_job_id"] != run["slurm_job_id"]
    folder = RunFolder(run_dir)
    assert "python -m sga_core stress" in folder.slurm_stress_script_path.read_text()
    assert not folder.stress_requested()  # nothing left for a local runner
    sst = wait_for(lambda: (v := run_status.effective_stress(run_dir))["state"]
                   in run_status.FINAL_STATES and v, 600, "the stress job", interval=2.0)
    assert sst["state"] == "completed", (sst, folder.stress_log(20))
    assert sst["results"] == ["quant8"] and (folder.stress_dir / "quant8.json").exists()
