"""Stand-ins for SLURM's client tools, for the answers a real cluster will not give on demand
(empty, garbage, stderr alone, NUL bytes, bytes that are not UTF-8, no answer at all).

:class:`StubSlurm` writes ``sbatch``, ``squeue``, ``sacct`` and ``scancel`` into a folder put
first on PATH. Each tool answers from files beside it: ``TOOL.out`` (stdout, bytes),
``TOOL.err`` (stderr), ``TOOL.rc`` (exit code); ``TOOL.hang`` makes it wait until ``TOOL.go``
exists (60 s at most). Every call's argv is appended to ``calls.jsonl``, so a test sees what
the workbench passed on.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

TOOLS = ("sbatch", "squeue", "sacct", "scancel")
STUB = """#!{python}
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
tool = os.path.basename(sys.argv[0])
with open(os.path.join(here, "calls.jsonl"), "a") as f:
    f.write(json.dumps([tool, *sys.argv[1:]]) + "\\n")
def part(name, default=b""):
    try:
        with open(os.path.join(here, tool + "." + name), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return default
if os.path.exists(os.path.join(here, tool + ".hang")):
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(here, tool + ".go")) and time.monotonic() < deadline:
        time.sleep(0.05)
sys.stdout.buffer.write(part("out"))
sys.stderr.buffer.write(part("err"))
sys.exit(int(part("rc", b"0") or 0))
"""


class StubSlurm:
    def __init__(self, folder: Path):
        self.bin = Path(folder)
        self.bin.mkdir(parents=True, exist_ok=True)
        for tool in TOOLS:
            path = self.bin / tool
            path.write_text(STUB.format(python=sys.executable))
            path.chmod(0o755)
        self.answer("sacct", err=b"sacct: error: Slurm accounting storage is disabled\n",
                    rc=1)

    def answer(self, tool: str, out: bytes = b"", err: bytes = b"", rc: int = 0) -> None:
        """What ``tool`` says from now on."""
        for name, data in (("out", out), ("err", err)):
            (self.bin / f"{tool}.{name}").write_bytes(data)
        (self.bin / f"{tool}.rc").write_text(str(rc))

    def hang(self, tool: str) -> None:
        (self.bin / f"{tool}.go").unlink(missing_ok=True)
        (self.bin / f"{tool}.hang").touch()

    def release(self, tool: str) -> None:
        (self.bin / f"{tool}.go").touch()
        (self.bin / f"{tool}.hang").unlink(missing_ok=True)

    def calls(self, tool: str | None = None) -> list[list[str]]:
        path = self.bin / "calls.jsonl"
        if not path.exists():
            return []
        rows = [json.loads(line) for line in path.read_text().splitlines() if line]
        return [r for r in rows if tool is None or r[0] == tool]

    def env(self) -> dict[str, str]:
        """PATH with the stubs first (for a CLI run in a process of its own)."""
        return {"PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}


def squeue_line(job: str, state: str, reason: str = "None", node: str = "(null)") -> bytes:
    """One line of squeue's ``%i|%T|%r|%N|%V|%S|%e`` answer."""
    return (f"{job}|{state}|{reason}|{node}|2026-11-24T08:00:00|N/A|N/A\n").encode()
