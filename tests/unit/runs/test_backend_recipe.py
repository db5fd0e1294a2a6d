""""Add a backend" (docs/contributing.md) works as written: the dry-run backend of the guide,
dropped into the backends package as one file, is found by discovery; ``train --backend
dryrun`` makes the run folder with its script and starts nothing; the run's status names the
backend, ``runs list`` says what the backend says of it, and a cancel goes to it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import sga_core.runs.backends as backends
from sga_core.runs import queue
from sga_core.runs import status as run_status
from sga_core.runs.backends import backend_of

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "contributing.md"


@pytest.fixture()
def dryrun(tmp_path):
    text = GUIDE.read_text()
    section = text[text.index("## Add a backend"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    folder = tmp_path / "more_backends"
    folder.mkdir()
    (folder / "dryrun.py").write_text(code)
    backends.__path__.append(str(folder))
    backends._FOUND.clear()
    yield backends.backend("dryrun")
    backends.__path__.remove(str(folder))
    backends._FOUND.clear()
    sys.modules.pop("sga_core.runs.backends.dryrun", None)


def test_the_dry_run_backend_is_one_file(dryrun, tiny_model_dir, demo_dir, tmp_path, capsys):
    from sga_core.cli import main

    assert "dryrun" in backends.names()
    runs = tmp_path / "runs"
    code = main(["train", "--backend", "dryrun", "--runs-dir", str(runs), "--model",
                 str(tiny_model_dir), "--method", "ga", "--forget",
                 str(demo_dir / "forget.jsonl"), "--max-steps", "1", "--run-id", "by-hand",
                 "--workspace", str(tmp_path / "ws")])
    out = capsys.readouterr().out
    assert code == 0, out
    run_dir = runs / "by-hand"
    assert (run_dir / "dryrun.sh").read_text() == f"cd {run_dir} && bash command.sh\n"
    assert f"script:     {run_dir / 'dryrun.sh'}" in out
    assert "submitted to a script to run by hand" in out
    st = run_status.read_run(run_dir)
    assert st["state"] == "queued" and st["backend"] == "dryrun"
    assert backend_of(st) is dryrun
    # nothing started it: no runner, no process, no log
    assert not queue.runner_alive(runs) and not (run_dir / "train.log").exists()
    main(["runs", "list", "--runs-dir", str(runs)])
    assert "not started: run dryrun.sh in its folder by hand" in capsys.readouterr().out
    assert queue.cancel(run_dir)["state"] == "cancelled"
    assert run_status.read_run(run_dir)["error"] == "cancelled before it started"
