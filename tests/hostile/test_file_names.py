"""A data file's name holding ESC or a right-to-left override (a browser upload's name is the
sender's choice: 'notes\u202elmth.jsonl' reads as 'notes' + 'html.jsonl' reversed): errors
naming the file show those characters escaped, in the CLI's one-line error and in the
DataError the pages show, as field names already are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sga_core.data import DataError, load_dataset

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["red\x1b[31m.jsonl", "evil\u202elmth.jsonl", "nul\u2066x.jsonl"]
HIDDEN = ("\x1b", "\u202e", "\u2066")


@pytest.mark.parametrize("name", NAMES)
def test_a_file_name_is_shown_escaped(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"")
    with pytest.raises(DataError) as err:
        load_dataset(path)
    assert not any(c in str(err.value) for c in HIDDEN), repr(str(err.value))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-m", "sga_core", "normals", "--forget", name,
                          "--k", "4", "--out", "n.jsonl"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert not any(c in res.stderr for c in HIDDEN), repr(res.stderr)
    assert "empty" in res.stderr
