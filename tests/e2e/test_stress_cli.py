"""``python -m sga_core stress`` as a user runs it: on a run id (results in the run's
stress/ folder, its model untouched) and on a bare model (--out), with one-line errors."""

from __future__ import annotations

import hashlib
import json
import shutil

from sga_core.config import TrainConfig
from tests.helpers.cli import sga_cli


def _tree_hash(folder) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + p.read_bytes())
    return h.hexdigest()


def test_stress_a_run_by_id(runs_dir, tiny_model_dir, demo_dir):
    from sga_core.runs.create import create_run
    from sga_core.runs.folder import STRESS_DIR

    cfg = TrainConfig.from_dict({
        "run_id": "tiny-cli", "model": str(tiny_model_dir), "method": "ga",
        "data": {"forget": str(demo_dir / "forget.jsonl"),
                 "retain": str(demo_dir / "retain.jsonl")},
        "training": {"batch_size": 2, "max_steps": 1, "lr": 1e-3, "probe_count": 0},
        "eval": {"max_new_tokens": 4}})
    run_dir = create_run(cfg, runs_dir)
    shutil.copytree(tiny_model_dir, run_dir / "model")
    before = _tree_hash(run_dir / "model")
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
    assert _tree_hash(run_dir / "model") == before


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
