"""WMDP end to end through the command line: import a folder of the published files, train
RMU from the shipped WMDP preset on the tiny model, and read its WMDP accuracies in
``results`` (the wmdp protocol's columns)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import sga_cli as cli


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_import_train_with_the_rmu_preset_and_read_the_accuracies(tiny_model_dir, tmp_path):
    root = Path(__file__).resolve().parents[2]
    files, ws, runs = tmp_path / "wmdp", tmp_path / "ws", tmp_path / "runs"
    for part in ("bio", "cyber"):  # the questions as cais/wmdp's config/split files
        _jsonl(files / f"wmdp-{part}" / "test.jsonl",
               [{"answer": i % 4, "question": f"{part} question {i}?",
                 "choices": ["one", "two", "three", "four"]} for i in range(6)])
    for name in ("cyber-forget-corpus", "cyber-retain-corpus"):
        _jsonl(files / f"{name}.jsonl", [{"text": f"{name} document {i} about networks."}
                                         for i in range(6)])
    res = cli("import", "wmdp", "--from-folder", str(files), "--workspace", str(ws),
              cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "protocol: wmdp" in res.stdout and "wmdp-chem" in res.stdout  # a missing part
    p = ws / "wmdp-cyber"
    res = cli("train", "--preset", str(root / "assets/presets/wmdp-rmu.yaml"),
              "--model", str(tiny_model_dir), "--task", "text",
              "--forget", str(p / "forget.jsonl"), "--retain", str(p / "retain.jsonl"),
              "--eval-set", f"wmdp_bio={p / 'eval/wmdp_bio.jsonl'}",
              "--eval-set", f"wmdp_cyber={p / 'eval/wmdp_cyber.jsonl'}",
              "--max-steps", "2", "--batch-size", "2", "--run-id", "rmu",
              "--runs-dir", str(runs), "--workspace", str(ws), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    config = (runs / "rmu" / "config.yaml").read_text()
    assert "steering_coeff: 6.5" in config and "protocol: wmdp" in config
    summary = json.loads((runs / "rmu" / "eval" / "summary.json").read_text())
    assert summary["protocol"]["name"] == "wmdp"
    for key in ("wmdp_bio_accuracy", "wmdp_cyber_accuracy"):
        assert 0.0 <= summary["metrics"][key]["value"] <= 1.0
    assert "forget_verbmem" not in summary["metrics"]
    res = cli("results", "--project", "wmdp-cyber", "--workspace", str(ws), "--runs-dir",
              str(runs), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "WMDP-bio acc" in res.stdout and "MMLU acc" in res.stdout
    assert "no mmlu set (eval.sets.mmlu)" in res.stdout
