"""Output paths of the CLI given as the wrong kind of thing: ``normals --out`` and
``rstar --out`` name a file to write, ``eval --out`` a folder. A folder where a file is
wanted (or a file where a folder is wanted) is a one-line error naming the flag and the path,
given before any work is done (a generation with a paid API, an r* analysis, an evaluation),
and nothing is left behind (no temporary file beside it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.cli import sga_cli as cli

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "assets" / "demo"




def refused_before_work(res: subprocess.CompletedProcess, flag: str, path: str,
                        where: Path) -> None:
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and flag in last and path in last, last
    assert "progress" not in res.stderr and "generating" not in res.stderr, res.stderr
    assert "r*=" not in res.stdout, res.stdout
    assert not [p.name for p in where.iterdir() if p.name.endswith(".tmp")]


def test_normals_out_naming_a_folder(tmp_path):
    (tmp_path / "out").mkdir()
    res = cli("normals", "--forget", str(DEMO / "forget.jsonl"), "--k", "4", "--out", "out",
              cwd=tmp_path)
    refused_before_work(res, "--out", "out", tmp_path)


def test_rstar_out_naming_a_folder(tmp_path, tiny_model_dir, idk_normals_file):
    (tmp_path / "out").mkdir()
    res = cli("rstar", "--model", str(tiny_model_dir), "--forget", str(DEMO / "forget.jsonl"),
              "--normals", str(idk_normals_file), "--k", "4", "--out", "out", cwd=tmp_path)
    refused_before_work(res, "--out", "out", tmp_path)


def test_eval_out_naming_a_file(tmp_path, tiny_model_dir):
    (tmp_path / "afile").write_text("keep me\n")
    res = cli("eval", str(tiny_model_dir), "--forget", str(DEMO / "forget.jsonl"),
              "--retain", str(DEMO / "retain.jsonl"), "--out", "afile", "--device", "cpu",
              "--max-retain-rows", "2", cwd=tmp_path)
    refused_before_work(res, "--out", "afile", tmp_path)
    assert (tmp_path / "afile").read_text() == "keep me\n"
