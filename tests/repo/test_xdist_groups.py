"""``make test`` runs the suite in two pytest-xdist workers: the tests of the SLURM cluster,
and the tests of a module that builds something once, must each share one worker
(tests/helpers/xdist_groups.py). A small suite of the same shape, run the way ``make test``
runs the real one, shows where each test ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = '''
import os, json
from pathlib import Path
import pytest
from tests.conftest import (pytest_configure, pytest_unconfigure,  # noqa: F401
                            pytest_xdist_make_scheduler, pytest_collection_modifyitems)
from tests.helpers import xdist_groups

OUT = Path(os.environ["WHERE_OUT"])

@pytest.fixture(scope="session")
def slurm_cluster():
    other = xdist_groups.claim(xdist_groups.SLURM_GROUP)
    assert not other, other
    yield "cluster"

@pytest.fixture()
def slurm(slurm_cluster):
    return slurm_cluster

@pytest.fixture(autouse=True)
def where(request):
    yield
    (OUT / (request.node.name + ".json")).write_text(json.dumps(
        os.environ.get("PYTEST_XDIST_WORKER")))
'''

SLURM_TESTS = "".join(f"def test_slurm_{i}(slurm):\n    pass\n\n" for i in range(8))
MODULE_TESTS = ('import pytest\n\n@pytest.fixture(scope="module")\ndef built():\n'
                '    return 1\n\n' +
                "".join(f"def test_mod_{i}(built):\n    pass\n\n" for i in range(8)))
FREE_TESTS = "".join(f"def test_free_{i}():\n    pass\n\n" for i in range(24))


@pytest.mark.slow
def test_the_slurm_tests_and_a_modules_tests_each_run_in_one_worker(tmp_path):
    pytest.importorskip("xdist")
    suite = tmp_path / "suite"
    (suite / "t").mkdir(parents=True)
    (suite / "t" / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (suite / "t" / "test_a_slurm.py").write_text(SLURM_TESTS)
    (suite / "t" / "test_b_module.py").write_text(MODULE_TESTS)
    (suite / "t" / "test_c_free.py").write_text(FREE_TESTS)
    (suite / "pytest.ini").write_text("[pytest]\n")
    out = tmp_path / "where"
    out.mkdir()
    env = dict(os.environ, WHERE_OUT=str(out), PYTHONPATH=str(ROOT))
    env.pop("SGA_XDIST_GROUPS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q",
         "-p", "no:cacheprovider", "t"],
        cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    where = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert len(where) == 40, sorted(where)
    assert set(where.values()) == {"gw0", "gw1"}, where  # both workers ran tests
    slurm = {w for name, w in where.items() if name.startswith("test_slurm_")}
    module = {w for name, w in where.items() if name.startswith("test_mod_")}
    assert len(slurm) == 1, where
    assert len(module) == 1, where
    # the controller's folder of group files is gone with the run
    assert not [p for p in Path(os.environ.get("TMPDIR", "/tmp")).glob("sga-xdist-groups-*")
                if p.stat().st_mtime >= (suite / "pytest.ini").stat().st_mtime]
