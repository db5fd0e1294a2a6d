"""Starting a run folder's ``accelerate launch`` as a subprocess: an argument list (never a
shell), output to ``train.log`` (never an unread pipe), its own session, state on disk."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from sga_core.config import load_config
from sga_core.runs import (
    FINAL_STATES,
    effective_status,
    launch_argv,
    now_iso,
    read_status,
    tail,
    write_status,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def resolve_argv(argv: list[str]) -> list[str]:
    """Run ``accelerate`` from this interpreter's environment (the project's venv)."""
    if argv and argv[0] == "accelerate":
        exe = Path(sys.executable).parent / "accelerate"
        if exe.exists():
            return [str(exe)] + argv[1:]
        return [sys.executable, "-m", "accelerate.commands.launch"] + argv[2:]
    return argv


def child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH"))
                                        if p)
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    # secrets never reach the training process (SPEC 7)
    for key in ("OPENAI_API_KEY",):
        env.pop(key, None)
    return env


def start(run_dir: str | os.PathLike) -> subprocess.Popen:
    """Start training for a prepared run folder; returns the Popen (not waited for)."""
    run_dir = Path(run_dir).resolve()
    cfg = load_config(run_dir / "config.yaml")
    argv = resolve_argv(launch_argv(cfg, str(run_dir / "config.yaml")))
    log = open(run_dir / "train.log", "ab")
    try:
        proc = subprocess.Popen(argv, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=child_env(),
                                start_new_session=True)
    finally:
        log.close()
    write_status(run_dir, "running", launcher_pid=proc.pid, pid=None,
                 started_at=now_iso(), host=os.uname().nodename)
    return proc


def finish(run_dir: str | os.PathLike, returncode: int) -> dict:
    """Record the exit of the launcher; a run that did not reach a final state is failed."""
    run_dir = Path(run_dir)
    st = read_status(run_dir)
    if st.get("state") in FINAL_STATES:
        if st.get("state") != "failed" or st.get("exit_code") is None:
            return write_status(run_dir, exit_code=returncode if returncode else
                                st.get("exit_code", 0))
        return st
    return write_status(run_dir, "failed", ended_at=now_iso(), exit_code=returncode,
                        error=f"the training process exited with code {returncode} before "
                              f"finishing; log tail:\n{tail(run_dir / 'train.log', 15)}")


def run_foreground(run_dir: str | os.PathLike, echo=print, poll_s: float = 1.0) -> dict:
    """Start a run and wait for it, echoing progress lines; Ctrl-C cancels it cleanly."""
    from sga_core.runs import request_cancel

    run_dir = Path(run_dir)
    proc = start(run_dir)
    seen = 0
    try:
        while proc.poll() is None:
            time.sleep(poll_s)
            seen = _echo_new_lines(run_dir / "train.log", seen, echo)
    except KeyboardInterrupt:
        echo("cancelling (waiting for the current step to end)...")
        request_cancel(run_dir)
        proc.wait()
    _echo_new_lines(run_dir / "train.log", seen, echo)
    finish(run_dir, proc.returncode)
    return effective_status(run_dir)


def _echo_new_lines(log: Path, seen: int, echo) -> int:
    if not log.exists():
        return seen
    with open(log, "rb") as fh:
        fh.seek(seen)
        data = fh.read()
    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.startswith("[") and "] " in line[:12]:  # the trainer's own progress lines
            echo(line)
    return seen + len(data)
