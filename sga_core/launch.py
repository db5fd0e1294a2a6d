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


def run_foreground(run_dir: str | os.PathLike, echo=print, poll_s: float = 1.0,
                   evaluate: bool | None = None) -> dict:
    """Start a run and wait for it, echoing progress lines; Ctrl-C cancels it cleanly.

    A run that completes is then evaluated (``python -m sga_core eval RUN_DIR``, output in
    eval.log) when ``evaluate`` is True, or when it is None and the config's
    ``eval.enabled`` is true."""
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
    completed = effective_status(run_dir).get("state") == "completed"
    if completed and (should_evaluate(run_dir) if evaluate is None else evaluate):
        run_eval_foreground(run_dir, echo=echo, poll_s=poll_s)
    return effective_status(run_dir)


# --- evaluation after training (sga_core.evaluate) -------------------------------------------

def eval_argv(run_dir: str | os.PathLike) -> list[str]:
    """The evaluation command of a run folder, as an argument list."""
    return [sys.executable, "-m", "sga_core", "eval", str(Path(run_dir).resolve())]


def should_evaluate(run_dir: str | os.PathLike) -> bool:
    """True for a completed run with a saved model whose config has ``eval.enabled``."""
    run_dir = Path(run_dir)
    if read_status(run_dir).get("state") != "completed":
        return False
    if not (run_dir / "model" / "config.json").exists():
        return False
    try:
        return bool(load_config(run_dir / "config.yaml").eval.enabled)
    except Exception:  # a config that no longer loads is not evaluated automatically
        return False


def start_eval(run_dir: str | os.PathLike) -> subprocess.Popen:
    """Start ``python -m sga_core eval RUN_DIR`` (output appended to eval.log, own session);
    status.json gets ``eval_state: running`` at once. Returns the Popen (not waited for)."""
    run_dir = Path(run_dir).resolve()
    log = open(run_dir / "eval.log", "ab")
    try:
        proc = subprocess.Popen(eval_argv(run_dir), cwd=PROJECT_ROOT, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=child_env(), start_new_session=True)
    finally:
        log.close()
    write_status(run_dir, eval_state="running", eval_pid=proc.pid, eval_error=None,
                 eval_started_at=now_iso(), eval_ended_at=None)
    return proc


def finish_eval(run_dir: str | os.PathLike, returncode: int) -> dict:
    """Record the end of an evaluation process; one that died without saying so is failed."""
    run_dir = Path(run_dir)
    st = read_status(run_dir)
    if returncode != 0 and st.get("eval_state") != "failed":
        return write_status(run_dir, eval_state="failed", eval_ended_at=now_iso(),
                            eval_error=f"the evaluation exited with code {returncode}; log "
                                       f"tail:\n{tail(run_dir / 'eval.log', 15)}")
    if returncode == 0 and st.get("eval_state") == "running":
        return write_status(run_dir, eval_state="failed", eval_ended_at=now_iso(),
                            eval_error="the evaluation ended without writing its summary")
    return st


def run_eval_foreground(run_dir: str | os.PathLike, echo=print, poll_s: float = 1.0) -> dict:
    """Evaluate a run folder in a subprocess and wait, echoing its progress lines; Ctrl-C
    stops the evaluation (the run itself stays completed)."""
    import signal

    run_dir = Path(run_dir)
    echo(f"evaluating {run_dir.name} (log: {run_dir / 'eval.log'})")
    log = run_dir / "eval.log"
    seen = log.stat().st_size if log.exists() else 0
    proc = start_eval(run_dir)
    try:
        while proc.poll() is None:
            time.sleep(poll_s)
            seen = _echo_new_lines(log, seen, echo)
    except KeyboardInterrupt:
        echo("stopping the evaluation...")
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        proc.wait()
        write_status(run_dir, eval_state="failed", eval_ended_at=now_iso(),
                     eval_error="evaluation interrupted")
    _echo_new_lines(log, seen, echo)
    st = finish_eval(run_dir, proc.returncode)
    echo(f"evaluation {st.get('eval_state')}" +
         (f": {st['eval_error']}" if st.get("eval_error") else ""))
    return st


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
