"""A run's config.yaml that the run-folder checks read (libyaml) but the full config loader
could not: nested deeper than Python's recursion allows, or not UTF-8. Loading it for an
evaluation or a re-run is a clear error naming the file, never a RecursionError traceback or
a decode error that names no file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sga_core.config import load_config
from sga_core.params import ConfigError
from tests.helpers.cli import sga_cli as cli

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "assets" / "demo"




@pytest.fixture
def run_folder(tmp_path, tiny_model_dir, idk_normals_file) -> Path:
    res = cli("train", "--model", str(tiny_model_dir), "--forget", str(DEMO / "forget.jsonl"),
              "--retain", str(DEMO / "retain.jsonl"), "--normals", str(idk_normals_file),
              "--k", "4", "--no-launch", "--runs-dir", "runs", "--run-id", "deep",
              "--max-steps", "2", "--cpu", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    return tmp_path / "runs" / "deep"


DAMAGE = {
    "deep notes": lambda text: (text + "notes: " + "[" * 3000 + "]" * 3000 + "\n").encode(),
    "UTF-16": lambda text: text.encode("utf-16"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_config_loader_names_the_file(run_folder, damage):
    path = run_folder / "config.yaml"
    path.write_bytes(DAMAGE[damage](path.read_text(encoding="utf-8")))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value)
    res = cli("eval", "deep", "--runs-dir", "runs", "--device", "cpu",
              cwd=run_folder.parent.parent)
    assert res.returncode == 2, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert "config.yaml" in res.stderr.strip().splitlines()[-1]


SELF = {"list": "&a [*a]", "mapping": "&a {x: *a}", "nested": "&a [1, {b: [*a]}]",
        "merge": "&a {<<: *a}"}


@pytest.mark.parametrize("shape", list(SELF))
def test_a_value_that_contains_itself_is_refused_at_once(shape):
    """An alias inside the collection it names ('&a [*a]', 7 bytes) stands for a value
    without end: the expansion bound refuses it instead of counting forever."""
    from sga_core.fileio import YAMLTooLarge, load_yaml
    from sga_core.presets import parse_preset

    with pytest.raises(YAMLTooLarge):
        load_yaml(f"notes: {SELF[shape]}\n", "p.yaml")
    with pytest.raises(ConfigError):
        parse_preset(f"eval:\n  sets: {SELF[shape]}\n", "p.yaml")


def test_a_run_whose_notes_contain_themselves_is_listed_damaged(run_folder):
    with (run_folder / "config.yaml").open("a") as fh:
        fh.write("notes: &a [*a]\n")
    cwd = run_folder.parent.parent
    res = cli("runs", "list", "--runs-dir", "runs", cwd=cwd)
    assert res.returncode == 0 and "damaged: config.yaml" in res.stdout, res.stdout
    (cwd / "self.yaml").write_text("eval:\n  sets: &a [*a]\n")
    res = cli("train", "--preset", "self.yaml", "--runs-dir", "runs", "--no-launch",
              cwd=cwd)
    assert res.returncode == 2 and "self.yaml" in res.stderr, res.stderr


def test_yaml_nested_too_deeply_is_a_clear_error_from_every_reader(tmp_path):
    """Nesting deeper than Python's recursion allows is refused by the YAML reader itself
    (a normal-answer prompt template through the CLI failed with a RecursionError)."""
    from sga_core.fileio import YAMLTooLarge, load_yaml

    deep = "system: " + "[" * 3000 + "]" * 3000 + "\n"
    with pytest.raises(YAMLTooLarge, match="nested too deeply"):
        load_yaml(deep, "t.yaml")
    (tmp_path / "t.yaml").write_text(deep)
    env_key = {"OPENAI_API_KEY": "not-used"}
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env_key}
    res = subprocess.run([sys.executable, "-m", "sga_core", "normals", "--backend", "openai",
                          "--base-url", "http://127.0.0.1:9", "--timeout", "1", "--forget",
                          str(DEMO / "forget.jsonl"), "--k", "4", "--out", "n.jsonl",
                          "--template", "t.yaml"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-1500:]
    assert "t.yaml" in res.stderr and "nested too deeply" in res.stderr, res.stderr
