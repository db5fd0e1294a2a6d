"""``python -m sga_core stress`` as a user runs it: on a run id (results in the run's
stress/ folder, its model untouched) and on a bare model (--out), with one-line errors."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import sga_cli
from tests.helpers.stress import file_hashes, tiny_run

pytestmark = pytest.mark.slow  # every test starts `python -m sga_core stress` processes


def test_stress_a_run_by_id(runs_dir, tiny_model_dir, demo_dir):
    from sga_core.runs.folder import STRESS_DIR

    run_dir = tiny_run(runs_dir, tiny_model_dir, demo_dir, "tiny-cli")
    before = file_hashes(run_dir / "model")
    p = sga_cli("stress", "tiny-cli", "--runs-dir", str(runs_dir), "--attacks",
                "relearn,quant4,roleplay", "--seeds", "0", "--relearn-steps", "1,2",
                "--max-new-tokens", "3", timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "relearn-2" in p.stdout and "quant4" in p.stdout and "wrote 4 file(s)" in p.stdout
    files = sorted(f.name for f in (run_dir / STRESS_DIR).iterdir())
    assert files == ["quant4.json", "relearn-1.json", "relearn-2.json", "roleplay.json"]
    res = json.loads((run_dir / STRESS_DIR / "quant4.json").read_text())
    assert res["run_id"] == "tiny-cli" and res["original"] == str(tiny_model_dir)
    assert res["samples"][0]["generated"] is not None  # ROUGE on: answers were generated
    assert file_hashes(run_dir / "model") == before


def test_stress_a_model_and_one_line_errors(tmp_path, tiny_model_dir, demo_dir):
    out = tmp_path / "out"
    p = sga_cli("stress", str(tiny_model_dir), "--forget", str(demo_dir / "forget.jsonl"),
                "--original", str(tiny_model_dir), "--out", str(out), "--attacks", "quant8",
                "--no-rouge", timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert (out / "quant8.json").exists() and "gap ~0" in p.stdout
    for args, needle in ((["--attacks", "quant3"], "unknown attack quant3"),
                         (["--relearn-share", "2"], "relearn_share: 2.0 is above the maximum"),
                         ([], "needs --forget and --out")):
        extra = [] if needle.startswith("needs") else ["--forget", str(demo_dir / "forget.jsonl"),
                                                       "--out", str(out)]
        p = sga_cli("stress", str(tiny_model_dir), *extra, *args, timeout=120)
        assert p.returncode == 2, p.stdout
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and needle in lines[0], p.stderr
