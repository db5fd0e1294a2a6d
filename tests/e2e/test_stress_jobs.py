"""Stress tests queued as jobs (docs/stress-tests.md#queued-as-a-job), through the real
runner: ``stress RUN --queue`` on a tiny run ends completed with its result files; a running
one cancelled ends cancelled, the files it wrote before whole; a queued one cancelled never
starts."""

from __future__ import annotations

import json

import pytest

from sga_core.runs import queue
from sga_core.runs.folder import RunFolder
from sga_core.runs.progress import stress_progress
from sga_core.runs.status import read_stress
from tests.helpers.cli import sga_cli
from tests.helpers.stress import tiny_run

pytestmark = pytest.mark.slow


def trained_run(runs_dir, tiny_model_dir, demo_dir, run_id="tiny-stress"):
    """A completed run folder whose model is the tiny model (no training needed)."""
    return tiny_run(runs_dir, tiny_model_dir, demo_dir, run_id, max_new_tokens=2,
                    completed=True, evaluated=True)


def wait_stress(run_dir, states, timeout):
    assert queue.wait_until(lambda: stress_progress(run_dir)["state"] in states, timeout), \
        json.dumps(read_stress(run_dir), indent=1) + "\n" + RunFolder(run_dir).stress_log(30)
    return stress_progress(run_dir)


def test_a_queued_stress_test_runs_in_the_runner_and_completes(runs_dir, tiny_model_dir,
                                                                demo_dir):
    run_dir = trained_run(runs_dir, tiny_model_dir, demo_dir)
    p = sga_cli("stress", run_dir.name, "--runs-dir", str(runs_dir), "--queue",
                "--attacks", "quant8", "--no-rouge", timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"queued a stress test of {run_dir.name}" in p.stdout
    # the request carries the attacks and settings; nothing ran in the CLI itself
    assert queue.wait_until(lambda: queue.runner_alive(runs_dir), 30)
    done = wait_stress(run_dir, {"completed", "failed"}, timeout=300)
    assert done["state"] == "completed", done
    st = read_stress(run_dir)
    assert st["attacks"] == ["quant8"] and st["results"] == ["quant8"]
    # the parts: the Original's and the unlearned model's scores, then quant8
    assert st["done"] == st["total"] == 3
    assert st["pid"] and st["pid_start"] and st["started_at"] <= st["ended_at"]
    res = json.loads((RunFolder(run_dir).stress_dir / "quant8.json").read_text())
    assert res["attack"] == "quant8" and res["settings"]["rouge"] is False
    log = RunFolder(run_dir).stress_log(50)
    assert "wrote 1 file(s)" in log
    assert not RunFolder(run_dir).stress_requested()
    assert done["fraction"] == 1.0 and done["eta_s"] is None
    # a second request while none is in progress is taken again; one in progress is refused
    queue.request_stress(run_dir, ["quant8"], {"rouge": False})
    with pytest.raises(ValueError, match="already queued"):
        queue.request_stress(run_dir, ["quant8"])
    queue.cancel_stress(run_dir)
    assert not RunFolder(run_dir).stress_requested()


def test_cancel_a_running_stress_test_keeps_the_files_written(runs_dir, tiny_model_dir,
                                                              demo_dir):
    """quant8 is written first, then relearning runs (100,000 steps, the most: until cancelled);
    cancel sends SIGTERM, the stress command records cancelled, quant8.json stays whole. A
    second run's stress test, queued behind it (one slot), is cancelled before it starts."""
    run_dir = trained_run(runs_dir, tiny_model_dir, demo_dir)
    other = trained_run(runs_dir, tiny_model_dir, demo_dir, run_id="tiny-stress-2")
    queue.request_stress(run_dir, ["quant8", "relearn"],
                         {"rouge": False, "seeds": [0], "relearn_steps": [100000]})
    assert queue.wait_until(lambda: stress_progress(run_dir)["state"] == "running", 60)
    queue.request_stress(other, ["quant8"], {"rouge": False})
    assert queue.wait_until(
        lambda: "quant8" in (read_stress(run_dir).get("results") or [])
        and (read_stress(run_dir).get("stage_done") or 0) > 0
        and (read_stress(run_dir).get("stage") or "").startswith("relearning"), 300), \
        read_stress(run_dir)
    running = stress_progress(run_dir)
    assert running["state"] == "running" and 0 < running["fraction"] < 1
    assert running["text"].startswith("stress test, part 4 of 4: relearning: training")
    assert running["eta_s"] is not None and running["eta_text"].startswith("ETA ")
    assert stress_progress(other)["state"] == "queued"  # the one slot is taken

    assert queue.cancel_stress(other)["state"] == "cancelled"
    queue.cancel_stress(run_dir)
    ended = wait_stress(run_dir, {"cancelled", "failed", "completed"}, timeout=60)
    assert ended["state"] == "cancelled", ended
    quant8 = json.loads((RunFolder(run_dir).stress_dir / "quant8.json").read_text())
    assert quant8["attack"] == "quant8"
    assert sorted(p.name for p in RunFolder(run_dir).stress_dir.iterdir()) == ["quant8.json"]
    assert "cancelled" in RunFolder(run_dir).stress_log(20)
    # the queued one never started: no process, no log, no result
    st = read_stress(other)
    assert st["state"] == "cancelled" and st["error"] == "cancelled before it started"
    assert not RunFolder(other).stress_log_path.exists()
    assert not RunFolder(other).stress_dir.exists()
