"""The whole tree passes the project's ruff settings (pyproject.toml), so a style slip fails
the suite rather than waiting for someone to run `make lint`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_is_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (make test installs it)")
    res = subprocess.run([ruff, "check", "--no-cache", "."], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


def test_the_library_folders_are_not_excluded():
    """`runs` and `workspace` in ruff's exclude list also hid sga_core/runs/: the data
    folders of that name are git-ignored, which ruff respects."""
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]
    excluded = set(cfg.get("exclude", [])) | set(cfg.get("extend-exclude", []))
    assert not excluded & {"runs", "workspace", "sga_core", "projects", "data"}
