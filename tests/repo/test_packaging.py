"""A non-editable install (``pip install .``, a wheel) carries the shipped files: the demo
data, the prompt templates, the presets, the "I don't know" templates and the accelerate
configs, which live at the top of the checkout (``assets/``, ``configs/``) and which
:mod:`sga_core.assets` finds in a checkout and in an installed wheel alike.

The wheel is built offline (no build isolation, no dependencies) from a copy of this
checkout's files, installed into a fresh venv whose dependencies come from this interpreter's
site-packages (a ``.pth`` line), and used from a folder outside the repository with no
``PYTHONPATH``, so only the wheel's ``sga_core`` can be imported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 300.0
SHIPPED = ["pyproject.toml", "README.md", "sga_core", "assets", "configs"]

CHECK = r"""
import json, sys
from pathlib import Path
import sga_core, sga_core.assets as a
from sga_core.normals.templates import list_templates
print(json.dumps({
    "sga_core": sga_core.__file__,
    "demo": sorted(p.name for p in a.DEMO_DIR.glob("*.jsonl")),
    "eval_sets": [Path(p).is_file() for p in a.demo_eval_sets("qa").values()]
                 + [Path(p).is_file() for p in a.demo_eval_sets("text").values()],
    "presets": sorted(p.name for p in a.PRESETS_DIR.glob("*.yaml")),
    "demo_preset": a.DEMO_PRESET.is_file(),
    "prompts": sorted(t.name for t in list_templates()),
    "idk": len(a.idk_templates()),
    "accelerate": sorted(p.name for p in a.ACCELERATE_CONFIGS_DIR.glob("*.yaml")),
    "files": sorted(str(p.relative_to(a.SHIPPED_ROOT)) for d in ("assets", "configs")
                    for p in (a.SHIPPED_ROOT / d).rglob("*") if p.is_file()),
}))
"""


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1",
               **extra)
    return env


def _run(argv: list, cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, env=_clean_env(), text=True,
                          capture_output=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, (argv, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


def _shipped_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for d in ("assets", "configs")
                  for p in (ROOT / d).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def test_pyproject_lists_every_package_of_the_library():
    # the wheel's package list is written out (the shipped files are mapped in beside it),
    # so a new sga_core subpackage must be added there too
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts)
               for p in (ROOT / "sga_core").rglob("__init__.py")}
    assert on_disk <= listed, f"packages missing from pyproject.toml: {on_disk - listed}"


@pytest.mark.slow
def test_wheel_install_carries_the_shipped_files(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in SHIPPED:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
          "--no-index", "-q", "-w", dist, src], cwd=tmp_path)
    wheel = next(dist.glob("sga_workbench-*.whl"))

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path)
    py = venv / "bin" / "python"
    purelib = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        cwd=tmp_path).stdout.strip())
    # the dependencies (and pip) from this interpreter's environment, after the venv's own
    (purelib / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([py, "-m", "pip", "install", "--no-deps", "--no-index", "-q", wheel], cwd=tmp_path)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    facts = json.loads(_run([py, "-c", CHECK], cwd=elsewhere).stdout.strip().splitlines()[-1])
    print(f"wheel install: {len(facts['files'])} shipped files, {len(facts['demo'])} demo "
          f"sets, {facts['idk']} IDK templates, accelerate configs {facts['accelerate']}")
    assert Path(facts["sga_core"]).is_relative_to(purelib), facts  # the wheel's copy
    assert set(facts["demo"]) == {p.name for p in (ROOT / "assets/demo").glob("*.jsonl")}
    assert facts["eval_sets"] and all(facts["eval_sets"]), facts
    assert facts["presets"] == sorted(p.name for p in (ROOT / "assets/presets").glob("*.yaml"))
    assert facts["demo_preset"], facts
    assert facts["prompts"] == sorted(p.stem for p in (ROOT / "assets/prompts").glob("*.yaml"))
    assert facts["idk"] == len(json.loads((ROOT / "assets/idk_templates.json").read_text()))
    assert facts["accelerate"] == sorted(
        p.name for p in (ROOT / "configs/accelerate").glob("*.yaml"))

    # every file of assets/ and configs/, under the same relative names
    assert facts["files"] == _shipped_files(), facts["files"]

    help_text = _run([py, "-m", "sga_core", "--help"], cwd=elsewhere).stdout
    assert "usage" in help_text.lower()
    out = elsewhere / "demo"
    _run([py, "-m", "sga_core", "demo-data", out], cwd=elsewhere)
    assert (out / "forget.jsonl").read_bytes() == (ROOT / "assets/demo/forget.jsonl").read_bytes()
