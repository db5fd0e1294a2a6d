"""Paths the shell gives that cannot work: ``--workspace`` or ``--runs-dir`` naming a file,
or a path below a file. Each is a one-line error naming the flag and the path and what is
wrong, exit code 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from sga_core.cli import main
from tests.helpers.cli import sga_cli as sga

ROOT = Path(__file__).resolve().parents[2]




def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("argv", [["project", "list"], ["project", "show", "demo"]])
def test_workspace_that_is_a_file(tmp_path, argv):
    afile = tmp_path / "not-a-folder"
    afile.write_text("x")
    done = sga(*argv, "--workspace", str(afile), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    line = one_line_error(done.stderr)
    assert "--workspace" in line and str(afile) in line and "not a folder" in line


def test_runs_dir_that_is_a_file(tmp_path, capsys, demo_dir):
    afile = tmp_path / "runs.txt"
    afile.write_text("x")
    code = main(["train", "--method", "ga", "--forget", str(demo_dir / "forget.jsonl"),
                 "--runs-dir", str(afile), "--no-launch"])
    assert code == 2
    line = one_line_error(capsys.readouterr().err)
    assert "--runs-dir" in line and str(afile) in line and "not a folder" in line
    assert afile.read_text() == "x"


def test_runs_dir_below_a_file_is_one_line(tmp_path, capsys, demo_dir):
    afile = tmp_path / "runs.txt"
    afile.write_text("x")
    code = main(["train", "--method", "ga", "--forget", str(demo_dir / "forget.jsonl"),
                 "--runs-dir", str(afile / "inside"), "--no-launch"])
    assert code == 2
    line = one_line_error(capsys.readouterr().err)
    assert str(afile) in line
