"""``runs list|show|cancel`` tell the evaluation's state beside the run's: a trained run whose
evaluation was killed is not just "completed", and cancelling a run that already ended says
so (with its state) instead of promising that it stops at its next step."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sga_core.runs import status as run_status
from tests.helpers.cli import sga_cli as cli


def make_run(run_id: str, tiny_model_dir, demo_dir, runs_dir, tmp_path) -> Path:
    res = cli("train", "--model", str(tiny_model_dir), "--forget",
              str(demo_dir / "forget.jsonl"), "--run-id", run_id, "--no-launch",
              "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    return runs_dir / run_id


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(60)
    return proc.pid


def test_list_and_show_tell_a_killed_evaluation(tiny_model_dir, demo_dir, runs_dir, tmp_path):
    run_dir = make_run("trained", tiny_model_dir, demo_dir, runs_dir, tmp_path)
    run_status.write_run(run_dir, "completed", exit_code=0)
    # its evaluator was killed outright: the record still says running, with a dead pid
    run_status.write_eval(run_dir, "running", pid=dead_pid(), stage="generating")

    res = cli("runs", "list", "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("trained"))
    assert line.split()[1] == "completed"
    assert "eval:failed" in line.split(), line

    res = cli("runs", "show", "trained", "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    shown = json.loads(res.stdout)
    assert shown["state"] == "completed"
    assert shown["eval_state"] == "failed" and "vanished" in shown["eval_error"]

    res = cli("runs", "cancel", "trained", "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "already completed" in res.stdout and "nothing to cancel" in res.stdout
    assert "evaluation failed" in res.stdout
    assert "stops at its next step" not in res.stdout


def test_cancel_of_an_ended_run_says_so(tiny_model_dir, demo_dir, runs_dir, tmp_path):
    run_dir = make_run("ended", tiny_model_dir, demo_dir, runs_dir, tmp_path)
    run_status.write_run(run_dir, "failed", error="boom")
    res = cli("runs", "cancel", "ended", "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "ended is already failed: nothing to cancel" in res.stdout
    assert not (run_dir / "CANCEL").exists()
    # a run that never ran shows no evaluation column value other than "-"
    res = cli("runs", "list", "--runs-dir", str(runs_dir), cwd=tmp_path)
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("ended"))
    assert "eval:-" in line.split()
