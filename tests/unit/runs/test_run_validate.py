"""Reading run-folder files back checked (sga_core.runs.validate): run folders made by the
library's own writers (create_run, status writes, appended logs, an evaluation's files),
then damaged the way a crash, a full disk or a hand edit damages them. The damaged run
says which file and why; logs of a running run may end in a line still being written."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sga_core.fileio import append_jsonl, atomic_write_json, atomic_write_jsonl
from sga_core.runs import status as run_status
from sga_core.runs.create import create_run
from sga_core.runs.folder import RunFolder
from sga_core.runs.folder import metrics as read_metrics
from sga_core.runs.listing import list_runs
from sga_core.runs.validate import Damaged

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture()
def runs(tmp_path):
    """A runs folder with run ``a`` created by create_run (config, data, status)."""
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.projects.training import build_config

    project = create_demo_project(root=tmp_path / "ws")
    project.save_normals(idk_normals(10, 4), "seed")
    for run_id in ("a", "b"):
        cfg = build_config(project, method="sga", method_args={"r": -0.8, "k": 4},
                           training={"max_steps": 5}, launch={}, model="embedded:smollm2",
                           normals=str(project.normals_path), run_id=run_id)
        create_run(cfg, tmp_path / "runs")
    return tmp_path / "runs"


def trained(run_dir: Path, steps: int, state: str = "completed", **fields) -> None:
    """What the trainer leaves: one metrics record per step and the status at the end."""
    for step in range(1, steps + 1):
        append_jsonl(run_dir / "metrics.jsonl", {"step": step, "loss": -1.0 * step})
    run_status.write_run(run_dir, state, step=steps, total_steps=steps, **fields)


def evaluated(run_dir: Path, n_forget: int = 4) -> None:
    """What an evaluation leaves: per-row records, then the summary counting them."""
    rows = [{"set": "forget", "index": i, "question": f"q{i}", "probability": 0.1 * i,
             "rouge_l_recall": 0.5} for i in range(n_forget)]
    atomic_write_jsonl(run_dir / "eval" / "per_sample.jsonl", rows)
    mean = sum(r["probability"] for r in rows) / n_forget
    atomic_write_json(run_dir / "eval" / "summary.json", {
        "task": "qa", "rows": {"forget": n_forget},
        "metrics": {"forget_probability": {"value": mean, "reason": None},
                    "forget_rouge": {"value": 0.5, "reason": None}}})


def damage_of(runs: Path, run_id: str) -> str | None:
    return {r["run_id"]: r for r in list_runs(runs)}[run_id]["damaged"]


def test_finished_run_log_cut_before_its_last_step(runs):
    trained(runs / "a", 5)
    lines = (runs / "a" / "metrics.jsonl").read_text().splitlines(keepends=True)
    (runs / "a" / "metrics.jsonl").write_text("".join(lines[:2]))  # cut after step 2
    with pytest.raises(Damaged) as exc:
        read_metrics(runs / "a")
    assert exc.value.file == "metrics.jsonl"
    assert "step 2" in str(exc.value) and "step 5" in str(exc.value)
    assert "metrics.jsonl" in damage_of(runs, "a")
    assert damage_of(runs, "b") is None
    res = subprocess.run([sys.executable, "-m", "sga_core", "runs", "show", "a",
                          "--runs-dir", str(runs)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "damaged: metrics.jsonl: ends at step 2" in res.stdout


def test_finished_run_log_cut_mid_record(runs):
    trained(runs / "a", 3)
    data = (runs / "a" / "metrics.jsonl").read_bytes()
    (runs / "a" / "metrics.jsonl").write_bytes(data[:-8])  # the last record cut
    with pytest.raises(Damaged, match=r"metrics.jsonl: line 3 is not a JSON record "
                                      r"\(cut off mid-record\)"):
        read_metrics(runs / "a")


def test_running_run_may_end_in_a_line_being_written(runs):
    """A live trainer's last, unterminated line is a write in progress: left out, no
    damage. A bad line before it is damage, with its line number."""
    trained(runs / "a", 2, state="running", pid=os.getpid(), host=socket.gethostname())
    with open(runs / "a" / "metrics.jsonl", "a") as fh:
        fh.write('{"step": 3, "lo')
    assert [r["step"] for r in read_metrics(runs / "a")] == [1, 2]
    assert damage_of(runs, "a") is None
    text = (runs / "a" / "metrics.jsonl").read_text().replace('"step": 2', '"step": 2,,')
    (runs / "a" / "metrics.jsonl").write_text(text)
    with pytest.raises(Damaged, match="metrics.jsonl: line 2 is not a JSON record"):
        read_metrics(runs / "a")


def test_non_finite_metrics_read_back_and_old_nulls_still_load(runs):
    """metrics.jsonl writes NaN and the infinities as "NaN", "Infinity", "-Infinity": they
    read back as those floats; null (not logged, and what older runs wrote for NaN) stays
    None; any other string is damage naming the line."""
    log = runs / "a" / "metrics.jsonl"
    log.write_text('{"step": 1, "loss": "NaN", "grad_norm": "Infinity", "r_star": "-Infinity"}\n'
                   '{"step": 2, "loss": null, "grad_norm": 1.5, "r": null}\n')
    run_status.write_run(runs / "a", "completed", step=2, total_steps=2)
    first, second = read_metrics(runs / "a")
    assert first["loss"] != first["loss"]  # NaN
    assert first["grad_norm"] == float("inf") and first["r_star"] == float("-inf")
    assert second["loss"] is None and second["r"] is None and second["grad_norm"] == 1.5
    assert damage_of(runs, "a") is None
    log.write_text('{"step": 1, "loss": "nan"}\n{"step": 2, "loss": 1.0}\n')
    with pytest.raises(Damaged, match=r'line 1: loss must be a number \(or "NaN"'):
        read_metrics(runs / "a")


@pytest.mark.parametrize("change, words", [
    ({"pid": [1], "state": "running"}, "pid must be a whole number"),
    ({"pid": "abc", "state": "running"}, "pid must be a whole number"),
    ({"launcher_pid": 10**30, "state": "running"}, "launcher_pid must be a whole number"),
    ({"state": 5}, "state must be one of"),
    ({"step": "two"}, "step must be a whole number"),
    ({"pid_start": "yesterday", "state": "running"}, "pid_start must be a whole number"),
])
def test_wrong_typed_status_shows_damaged(runs, change, words):
    path = runs / "a" / "status.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    st = run_status.effective_run(runs / "a")  # never reaches the process checks
    assert st["state"] == "damaged" and "pid" not in st
    assert st["damaged"].startswith("status.json: ") and words in st["damaged"]
    assert damage_of(runs, "a").startswith("status.json: ")
    assert damage_of(runs, "b") is None
    assert run_status.run_view(runs / "a")["state"] == "damaged"


@pytest.mark.parametrize("content, words", [
    ("[]", "must hold a JSON object, got []"),
    ('{"metrics": 5}', "metrics must be an object, got 5"),
    ('{"metrics": {"forget_quality": {"value": "high"}}}',
     "metrics entry 'forget_quality' value must be a number"),
    ('{"metrics": {"forget_quality": {"val', "is not valid JSON"),
    ("", "is empty"),
    ('{"metrics": {"forget_quality": {"value": 0.5, "per_sample": ["D"]}}}',
     "metrics entry 'forget_quality' per_sample item 0 must be a number"),
    ('{"metrics": {}, "model_utility_components": {"components": 7}}',
     "model_utility_components components must be an object"),
])
def test_damaged_summary(runs, content, words):
    from sga_core.report.table import summary_of

    evaluated(runs / "a")
    (runs / "a" / "eval" / "summary.json").write_text(content)
    with pytest.raises(Damaged) as exc:
        RunFolder(runs / "a").summary()
    assert str(exc.value).startswith("eval/summary.json: ") and words in str(exc.value)
    assert summary_of(runs / "a") is None  # tables leave it out; the listing says why
    assert damage_of(runs, "a").startswith("eval/summary.json: ")


def test_config_with_words_for_r(runs):
    path = runs / "a" / "config.yaml"
    path.write_text(path.read_text().replace("r: -0.8", "r: minus-point-eight"))
    assert damage_of(runs, "a") == ("config.yaml: method_args.r must be a number, got "
                                    "'minus-point-eight'")
    row = {r["run_id"]: r for r in list_runs(runs)}["a"]
    assert row["r"] is None and row["state"] == "queued"  # still listed


def test_not_utf8_and_nested_too_deep(runs):
    (runs / "a" / "status.json").write_bytes(b'{"state": "qu\xff"}')
    assert "not UTF-8" in run_status.effective_run(runs / "a")["damaged"]
    (runs / "b" / "status.json").write_text("[" * 100000 + "]" * 100000)
    assert run_status.effective_run(runs / "b")["state"] == "damaged"


def test_intervals_refuse_over_missing_rows(runs):
    from sga_core.report.uncertainty import run_intervals

    evaluated(runs / "a", n_forget=6)
    whole = run_intervals(runs / "a", n_boot=50)
    assert {r["metric"]: r["n"] for r in whole}["forget_probability"] == 6
    path = runs / "a" / "eval" / "per_sample.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:4]))
    with pytest.raises(Damaged, match=r"eval/per_sample.jsonl: 2 evaluated rows are missing "
                                      r"\(forget: 4 of 6 rows"):
        run_intervals(runs / "a", n_boot=50)
    assert "eval/per_sample.jsonl" in damage_of(runs, "a")


def test_config_alias_bomb_is_damage_not_a_hang(runs):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
        for i in range(8))
    (runs / "a" / "config.yaml").write_text(bomb)
    assert damage_of(runs, "a").startswith("config.yaml: ")
    assert "expands to more than" in damage_of(runs, "a")
    assert damage_of(runs, "b") is None

