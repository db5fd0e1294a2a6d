"""Until the training loop runs, a trainer started by a foreground caller (``train`` in a
terminal) watches that caller from a thread: the loop itself stops a run whose caller is
gone (at its next step, saving the model), but before it runs the trainer may spend many
seconds importing and loading the model, all that time showing a run that nobody waits for
as running. Killed outright, the caller cannot stop it; this does, within a second."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from sga_core.runs.procs import caller_gone, foreground_caller

POLL_S = 0.25
_lock = threading.Lock()
_standing_down = threading.Event()


def start(run_dir: str | os.PathLike) -> threading.Thread | None:
    """Watch this process's foreground caller, if it has one, until :func:`stand_down`."""
    caller = foreground_caller()
    if caller is None:
        return None
    thread = threading.Thread(target=_watch, args=(Path(run_dir), caller), daemon=True,
                              name="caller-watch")
    thread.start()
    return thread


def stand_down() -> None:
    """The training loop takes over (it checks the caller at every step)."""
    with _lock:
        _standing_down.set()


def _watch(run_dir: Path, caller: dict) -> None:
    while not _standing_down.wait(POLL_S):
        if not caller_gone(caller):
            continue
        with _lock:
            if _standing_down.is_set():
                return
            if os.environ.get("RANK", "0") == "0":
                from sga_core.fileio import now_iso
                from sga_core.runs.status import write_run

                try:
                    write_run(run_dir, "cancelled", ended_at=now_iso(), exit_code=130,
                              error=f"its foreground caller (pid {caller['pid']}) exited "
                                    "before training started")
                except OSError:
                    pass
            os._exit(130)
