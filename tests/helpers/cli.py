"""The workbench's CLI run as a user runs it: `python -m sga_core ARGS` in a process of its
own, from the checkout under test (PYTHONPATH), with no standard input, output captured."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sga_cli(*args: str, cwd: str | os.PathLike | None = None, timeout: float = 300,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m sga_core *args``; ``env`` adds variables to this process's environment."""
    return subprocess.run([sys.executable, "-m", "sga_core", *args], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
