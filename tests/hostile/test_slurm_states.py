"""Hostile SLURM answers and hostile job ids (docs/slurm.md#states).

- squeue/sacct answers a real cluster gives rarely (empty, garbage, stderr alone, NUL bytes,
  cut-off lines, bytes that are not UTF-8, no answer at all), through every reader of a
  SLURM run's state (run, evaluation, stress test), the CLI (``runs list/show/cancel``) and
  every page: no exception, no page broken, no false state written.
- status files whose ``slurm_job_id`` is not a job id (``--me`` and friends): the reader
  names the damage, and nothing that is not a job id reaches scancel, squeue or sacct.

SLURM's tools are stubs (tests/helpers/slurm_stub.py) that log what they were passed.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from sga_core.runs import queue
from sga_core.runs import status as run_status
from sga_core.runs.slurm import client, states
from sga_core.runs.slurm.client import JobTable, SlurmError
from tests.helpers.cli import sga_cli
from tests.helpers.slurm_stub import StubSlurm, squeue_line

JOB, EVAL_JOB, STRESS_JOB = "501", "502", "503_1"
PAGES = sorted(f"app_pages/{p.name}" for p in (Path(__file__).resolve().parents[2] /
                                               "app_pages").glob("*.py"))


def table_of(*lines: bytes) -> bytes:
    return b"".join(lines)


#: (stdout, stderr, exit code) of squeue; each says nothing true of the three jobs
ANSWERS = {
    "empty": (b"", b"", 0),
    "blank": (b"\n \n\t\n", b"", 0),
    "html": (b"<html><body>502 Bad Gateway</body></html>\n", b"", 0),
    "stderr only": (b"", b"squeue: error: Unable to contact slurm controller\n", 0),
    "stderr only, not UTF-8": (b"", b"squeue: error: caf\xe9 \xff\xfe\n", 0),
    "NUL bytes": (b"\0" * 64, b"", 0),
    "NUL in an id": (squeue_line("5\x0001", "PENDING"), b"", 0),
    "NUL in a state": (squeue_line(JOB, "PEND\0ING"), b"", 0),
    "cut-off line": (b"501|PENDI", b"", 0),
    "too many fields": (b"501|PENDING|" + b"|x" * 500 + b"\n", b"", 0),
    "an option for an id": (squeue_line("--me", "PENDING"), b"", 0),
    "lower-case state": (squeue_line(JOB, "pending"), b"", 0),
    "one long line": (b"x" * 200_000, b"", 0),
    "other jobs only": (squeue_line("9", "RUNNING") + squeue_line("9_3", "PENDING"), b"", 0),
    "failure, not UTF-8": (b"", b"squeue: error: \xe9\xe9\xe9 socket\n", 1),
    "not UTF-8, job listed": (squeue_line(JOB, "PENDING", "@").replace(b"@", b"\xe9\xff")
                              + squeue_line(EVAL_JOB, "PENDING") +
                              squeue_line(STRESS_JOB, "PENDING"), b"", 0),
}


@pytest.fixture()
def stub(tmp_path, monkeypatch):
    s = StubSlurm(tmp_path / "bin")
    monkeypatch.setenv("PATH", s.env()["PATH"])
    monkeypatch.setattr(states, "TABLE", JobTable(ttl=0))
    monkeypatch.setattr(client, "TABLE", states.TABLE)
    return s


def slurm_run(root: Path, name: str) -> Path:
    """A run whose training's job is pending, with an evaluation and a stress test queued
    as SLURM jobs of their own."""
    run_dir = root / name
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text("{}\n")
    run_status.write_run(run_dir, "queued", backend="slurm", slurm_job_id=JOB,
                         slurm_submitted_at="2026-11-24T08:00:00Z")
    run_status.write_eval(run_dir, "queued", slurm_job_id=EVAL_JOB)
    run_status.write_stress(run_dir, "queued", slurm_job_id=STRESS_JOB, attacks=["quant8"])
    return run_dir


def views(run_dir: Path) -> dict:
    return {"run": run_status.effective_run(run_dir), "eval": run_status.effective_eval(run_dir),
            "stress": run_status.effective_stress(run_dir)}


def test_hostile_squeue_answers_never_make_a_false_state(stub, tmp_path):
    counts: Counter = Counter()
    for n, (name, (out, err, rc)) in enumerate(ANSWERS.items()):
        run_dir = slurm_run(tmp_path / "runs", f"r{n}")
        stub.answer("squeue", out=out, err=err, rc=rc)
        states.TABLE.forget()
        for _ in range(3):  # three answers in a row
            counts["tried"] += 1
            try:
                shown = views(run_dir)
            except Exception as exc:  # noqa: BLE001 - counted, then failed on below
                counts["uncaught exceptions"] += 1
                print(f"{name}: {type(exc).__name__}: {exc}")
                continue
            if any(v["state"] != "queued" for v in shown.values()):
                counts["false states"] += 1
                print(f"{name}: shown {[v['state'] for v in shown.values()]}")
            elif name != "not UTF-8, job listed":
                counts["doubt said"] += all(v.get("slurm_problem") for v in shown.values())
        written = [run_status.read_run(run_dir), run_status.read_eval(run_dir),
                   run_status.read_stress(run_dir)]
        counts["false states written"] += sum(w["state"] != "queued" or
                                              bool(w.get("slurm_state_final")) for w in written)
    print(dict(counts))
    assert counts["uncaught exceptions"] == 0 and counts["false states"] == 0, counts
    assert counts["false states written"] == 0, counts
    assert counts["doubt said"] == 3 * (len(ANSWERS) - 1), counts


def test_hostile_squeue_answers_through_the_cli(stub, tmp_path):
    runs = tmp_path / "runs"
    slurm_run(runs, "r1")
    env = {**stub.env(), "SGA_SLURM_TTL": "0"}
    for name, (out, err, rc) in ANSWERS.items():
        stub.answer("squeue", out=out, err=err, rc=rc)
        for args in (("list",), ("show", "r1")):
            res = sga_cli("runs", *args, "--runs-dir", str(runs), env=env)
            assert res.returncode == 0 and "Traceback" not in res.stderr, (name, res.stderr)
            assert "failed" not in res.stdout.split("SLURM job")[0], (name, res.stdout)
    stub.answer("squeue", out=ANSWERS["not UTF-8, job listed"][0])
    stub.answer("scancel", err=b"scancel: error: Kill job error on job id 501: \xe9\n", rc=1)
    res = sga_cli("runs", "cancel", "r1", "--runs-dir", str(runs), env=env)
    assert "Traceback" not in res.stderr and "Kill job error" in res.stderr, res.stderr
    assert stub.calls("scancel") == [["scancel", JOB]]


@pytest.mark.slow
@pytest.mark.parametrize("answer", ["not UTF-8, job listed", "stderr only, not UTF-8",
                                    "hangs"])
def test_every_page_renders_with_a_hostile_squeue(stub, ui_env, monkeypatch, answer):
    from tests.helpers.ui import open_page

    slurm_run(ui_env / "runs", "r1")
    if answer == "hangs":
        monkeypatch.setattr(client, "READ_TIMEOUT_S", 1.0)
        stub.hang("squeue")
    else:
        out, err, rc = ANSWERS[answer]
        stub.answer("squeue", out=out, err=err, rc=rc)
    broken = []
    for page in PAGES:
        try:
            open_page(page)
        except AssertionError as exc:
            broken.append((page, str(exc)[:200]))
    stub.release("squeue")
    assert broken == [], broken
    # the hanging squeue is backed off (its waits double), not asked once per page
    if answer == "hangs":
        assert len(stub.calls("squeue")) < len(PAGES) // 2, len(stub.calls("squeue"))


#: slurm_job_id values that are not job ids; each must never reach a tool
HOSTILE_IDS = ["--me", "-u", "--user=root", "-uroot", "--signal=KILL", "1 --me", "1,2",
               "1;id", "$(id)", "`id`", "1\n--me", "1\0", "１２３", "12_", "_3", "1_2_3",
               "", " 12", "0x1F", "1e3", "-1", 12, 1.5, True, ["1"], {"id": "1"}]


@pytest.mark.parametrize("kind", ["run", "eval", "stress"])
def test_hostile_job_ids_in_status_files(stub, tmp_path, kind):
    counts: Counter = Counter()
    write = {"run": run_status.write_run, "eval": run_status.write_eval,
             "stress": run_status.write_stress}[kind]
    read = {"run": run_status.read_run, "eval": run_status.read_eval,
            "stress": run_status.read_stress}[kind]
    cancel = {"run": queue.cancel, "eval": queue.cancel_eval,
              "stress": queue.cancel_stress}[kind]
    for n, bad in enumerate(HOSTILE_IDS):
        counts["tried"] += 1
        run_dir = tmp_path / "runs" / f"r{n}"
        run_dir.mkdir(parents=True)
        (run_dir / "config.yaml").write_text("{}\n")
        run_status.write_run(run_dir, "completed" if kind != "run" else "queued")
        write(run_dir, "queued" if kind != "run" else "running", slurm_job_id=bad)
        st = read(run_dir)
        if st.get("state") == "damaged" and "slurm_job_id" in st["damaged"]:
            counts["clear errors"] += 1
        try:
            cancel(run_dir)
        except (SlurmError, RuntimeError) as exc:
            counts["refused"] += 1
            assert "Traceback" not in str(exc)
        except Exception as exc:  # noqa: BLE001
            counts["uncaught exceptions"] += 1
            print(f"{bad!r}: {type(exc).__name__}: {exc}")
        res = sga_cli("runs", "cancel", f"r{n}", "--runs-dir", str(tmp_path / "runs"),
                      env=stub.env()) if n % 9 == 0 else None  # the CLI too, for some
        if res is not None:
            assert "Traceback" not in res.stderr, res.stderr
    injected = [c for c in stub.calls() if c[0] == "scancel" or "-j" in c]
    print(kind, dict(counts), "tool calls:", stub.calls())
    assert counts["uncaught exceptions"] == 0, counts
    assert counts["clear errors"] == len(HOSTILE_IDS), counts
    assert injected == [], injected  # no cancel, no lookup by id, of anything not an id
