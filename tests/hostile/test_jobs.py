"""Hostile job records: a damaged or crafted ``.runner.json`` (why a run
waits), junk cancel stamps in status files (what the runner escalates, what pages show), and
run folders that only look like a project's prepared model (what a re-run replaces). Each
gives a plain answer: never an exception, never a signal, never a replaced folder."""

from __future__ import annotations

import fcntl
import json

import pytest

from sga_core.runs import queue
from sga_core.runs.folder import RunFolder
from sga_core.runs.progress import eval_progress, stress_progress
from sga_core.runs.runner import EVALUATION, STRESS, TRAINING, Runner
from sga_core.runs.status import write_eval, write_run, write_stress

RUNNER_JSON = [
    b"", b"{", b"[]", b"null", b"\x00\xff", b'"slots"', b'{"slots": "abc"}',
    b'{"slots": [1, null, "x", []]}', b'{"slots": [{"run_id": {"a": 1}, "job": 1e308}]}',
    b'{"max_parallel": -1, "slots": [{"run_id": "a"}]}', b'{"max_parallel": "2"}',
    b'{"max_parallel": true, "slots": [{}]}',
    ('{"slots": [' + ",".join(['{"run_id": "' + "x" * 10000 + '", "job": "j"}'] * 50)
     + "]}").encode(),
    b"[" * 100000 + b"]" * 100000,
]


@pytest.fixture()
def queued(tmp_path):
    root = tmp_path / "runs"
    d = root / "q1"
    d.mkdir(parents=True)
    RunFolder(d).config_path.write_text("method: ga\nmodel: tiny\n")
    write_run(d, "queued", mode="queue", created_at="2026-01-01T00:00:00Z")
    return d


@pytest.mark.parametrize("body", RUNNER_JSON, ids=range(len(RUNNER_JSON)))
def test_a_damaged_runner_record_still_says_why_a_run_waits(queued, body):
    root = queued.parent
    (root / queue.RUNNER_INFO).write_bytes(body)
    assert isinstance(queue.runner_info(root), dict)
    with open(root / queue.RUNNER_LOCK, "a") as lock:  # a runner holds the queue
        fcntl.flock(lock, fcntl.LOCK_EX)
        said = queue.wait_reason(queued)
    assert isinstance(said, str) and 0 < len(said) < 1000


JUNK_STAMPS = [5, -1, [], {}, "", "junk", "9999-99-99T99:99:99Z", "2026-01-01", "\x00",
               "x" * 100000, True, 1e308]


@pytest.mark.parametrize("stamp", JUNK_STAMPS, ids=range(len(JUNK_STAMPS)))
def test_junk_cancel_stamps_neither_crash_nor_signal(tmp_path, stamp):
    import os

    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    RunFolder(run).config_path.write_text("method: ga\nmodel: tiny\n")
    # the records name this test's own process: nothing may signal it
    write_run(run, "completed", pid=os.getpid())
    write_eval(run, "running", pid=os.getpid(), cancel_requested_at=stamp)
    write_stress(run, "running", pid=os.getpid(), cancel_requested_at=stamp)
    runner = Runner(run.parent, grace_s=0.0)
    for job in (TRAINING, EVALUATION, STRESS):
        asked = runner.cancel_asked(job, run)
        assert asked is None or isinstance(asked, float)
    assert isinstance(eval_progress(run)["text"], str)
    assert isinstance(stress_progress(run)["text"], str)
    assert isinstance(queue.live_jobs(run), list)


@pytest.mark.parametrize("run_id, config", [
    ("demo-original", "method: sga\nnotes: 'prepare: original'\n"),  # not a fine-tune
    ("demo-original", "method: finetune\nnotes: mine\n"),  # not made by prepare
    ("demo-original", "method: finetune\nnotes: [prepare]\n"),
    ("demo-original", "{{{{"),  # damaged
    ("demo-original", "- a\n- b\n"),
    ("demo-original-zzzzzzzzzz", "method: finetune\nnotes: 'prepare: original'\n"),
    ("demo-retain-ref-0123456789a", "method: finetune\nnotes: 'prepare: x'\n"),
    ("original", "method: finetune\nnotes: 'prepare: original'\n"),
])
def test_what_only_looks_like_a_prepared_model_is_re_run_as_a_new_run(tmp_path, run_id,
                                                                       config):
    d = tmp_path / "runs" / run_id
    d.mkdir(parents=True)
    RunFolder(d).config_path.write_text(config)
    assert queue.prepared_role(d) is None


def test_a_run_folder_that_is_a_file_or_gone_has_no_live_job(tmp_path):
    (tmp_path / "file").write_text("x")
    assert queue.live_jobs(tmp_path / "file") == []
    assert queue.live_jobs(tmp_path / "gone") == []
    assert json.dumps(queue.runner_info(tmp_path / "gone")) == "{}"
