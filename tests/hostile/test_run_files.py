"""Run-folder files where a folder stands: writing one (an evaluation's status, a result the
CLI writes) fails naming that file, not the hidden temporary file it was written through;
and ``runs cancel`` says what became of the run (a run that never started is cancelled; a
run with a damaged status.json is named damaged), never that 'a running run stops at its
next step' about a run that is not running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sga_core.fileio import atomic_write_json
from tests.helpers.cli import sga_cli as cli

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "assets" / "demo"




def test_a_folder_where_a_file_is_written_is_named(tmp_path):
    target = tmp_path / "eval" / "status.json"
    target.mkdir(parents=True)
    with pytest.raises(IsADirectoryError) as err:
        atomic_write_json(target, {"state": "running"})
    assert err.value.filename == str(target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["status.json"]


@pytest.fixture
def runs(tmp_path, tiny_model_dir, idk_normals_file) -> Path:
    for run_id in ("never-started", "damaged-status"):
        res = cli("train", "--model", str(tiny_model_dir), "--forget",
                  str(DEMO / "forget.jsonl"), "--retain", str(DEMO / "retain.jsonl"),
                  "--normals", str(idk_normals_file), "--k", "4", "--no-launch",
                  "--runs-dir", "runs", "--run-id", run_id, "--cpu", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    (tmp_path / "runs" / "damaged-status" / "status.json").write_text('{"state": 5}')
    return tmp_path / "runs"


def test_runs_cancel_says_what_became_of_the_run(runs):
    res = cli("runs", "cancel", "never-started", "--runs-dir", str(runs), cwd=runs.parent)
    assert res.returncode == 0, res.stderr
    assert "cancelled" in res.stdout and "a running run stops" not in res.stdout, res.stdout
    res = cli("runs", "cancel", "damaged-status", "--runs-dir", str(runs), cwd=runs.parent)
    assert "damaged" in res.stdout + res.stderr and "status.json" in res.stdout + res.stderr
    assert "a running run stops" not in res.stdout, res.stdout


@pytest.mark.parametrize("host", [5, None, "", ["x"], {"a": 1}])
def test_a_job_status_with_a_junk_host_is_not_taken_for_another_machine(tmp_path, host):
    """A background job's status.json whose host is not a machine name (a number, empty, a
    list) is judged on this machine: its process is gone, so the job shows failed and a new
    one may start, instead of 'running on another machine' forever."""
    from sga_core.runs.jobs import kind

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid that no process of ours holds any more
    job = tmp_path / "job"
    atomic_write_json(job / "status.json", {"state": "running", "pid": child.pid,
                                            "host": host})
    shown = kind("probe").effective(job)
    assert shown["state"] == "failed", shown
