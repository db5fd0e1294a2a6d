"""The one way the workbench starts a detached child process (a training launcher, an
evaluation, the queue runner, a project job): an argument list (never a shell), its own
session (so its whole process group can be ended), a CPU niceness, its output appended to a
log file (never an unread pipe) and an environment without secrets unless given."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

from sga_core.assets import PROJECT_ROOT
from sga_core.offline import OFFLINE_ENV

SECRET_ENV = ("OPENAI_API_KEY",)


def job_niceness() -> int:
    """How much nicer than the process that starts them background jobs run:
    ``$SGA_JOB_NICE`` (default 10; 0 = off), so a training job never starves the browser's
    server of the CPU. Jobs started by a niced process (the runner) inherit its niceness."""
    try:
        return max(0, min(19, int(os.environ.get("SGA_JOB_NICE", "10"))))
    except ValueError:
        return 10


def nice_prefix(increment: int | None = None) -> list[str]:
    """``["nice", "-n", N]`` that makes a child ``increment`` (default
    :func:`job_niceness`) nicer than this process; empty for 0."""
    increment = job_niceness() if increment is None else increment
    nice = shutil.which("nice")
    return [nice, "-n", str(increment)] if increment > 0 and nice else []


def child_env(extra: dict | None = None) -> dict:
    """This environment for a child: offline defaults, unbuffered output, the project on
    ``PYTHONPATH``, and no secret (SPEC 7) unless ``extra`` passes one on purpose."""
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    for key, value in OFFLINE_ENV.items():
        env.setdefault(key, value)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH"))
                                        if p)
    env.update(extra or {})
    return env


def resolve_argv(argv: list[str]) -> list[str]:
    """Run ``accelerate`` (and ``python``) from this interpreter's environment."""
    if argv and argv[0] == "accelerate":
        exe = Path(sys.executable).parent / "accelerate"
        if exe.exists():
            return [str(exe)] + argv[1:]
        return [sys.executable, "-m", "accelerate.commands.launch"] + argv[2:]
    if argv and argv[0] == "python":
        return [sys.executable] + argv[1:]
    return list(argv)


def spawn(argv: list[str], log: str | os.PathLike, *, env: dict | None = None,
          nice: int | None = None, cwd: str | os.PathLike = PROJECT_ROOT,
          append: bool = True) -> subprocess.Popen:
    """Start ``argv`` detached: a new session, ``nice`` more niceness than this process
    (default :func:`job_niceness`; 0 = the same), stdout and stderr to ``log`` (appended, or
    truncated), stdin closed, :func:`child_env` plus ``env``. Returns the Popen; its pid is
    its process-group id."""
    log = Path(log)
    log.parent.mkdir(parents=True, exist_ok=True)
    full = nice_prefix(nice) + resolve_argv(argv)
    with open(log, "ab" if append else "wb") as fh:
        return subprocess.Popen(full, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=child_env(env),
                                start_new_session=True)


# set by a foreground caller (``train`` / ``prepare`` / ``eval`` in a terminal) to
# ``host:pid``: the trainer or evaluation it started stops, cancelled, once that process is
# gone (killed with SIGKILL, which it cannot catch); the child is in its own session
CALLER_ENV = "SGA_FOREGROUND_CALLER"


def caller_env() -> dict[str, str]:
    """The environment that ties a child process to this one, its foreground caller."""
    return {CALLER_ENV: f"{socket.gethostname()}:{os.getpid()}"}


def foreground_caller() -> int | None:
    """The pid of the foreground process that started this one (:func:`caller_env`), when
    it runs on this host; None otherwise (a queued run, command.sh, another machine)."""
    host, _, pid = os.environ.get(CALLER_ENV, "").rpartition(":")
    return int(pid) if pid.isdigit() and host == socket.gethostname() else None


def caller_gone(caller: int | None) -> bool:
    """Whether the foreground caller ``caller`` (:func:`foreground_caller`) has exited."""
    return caller is not None and not pid_alive(caller)


def pid_alive(pid: int | None) -> bool:
    """Whether a process with this pid exists and is not a zombie."""
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped) is not alive
        with open(f"/proc/{int(pid)}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def group_alive(pgid: int | None) -> bool:
    """Whether any process of process group ``pgid`` is alive (zombies aside)."""
    if not pgid:
        return False
    try:
        os.killpg(int(pgid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if int(fields[2]) == int(pgid) and fields[0] != "Z":
            return True
    return False


def kill_group(pid: int | None, sig: int = signal.SIGTERM) -> bool:
    """Send ``sig`` to the process group of ``pid`` (a process :func:`spawn` started leads
    its own group); False when it is gone."""
    if not pid:
        return False
    try:
        os.killpg(os.getpgid(int(pid)), sig)
        return True
    except (ProcessLookupError, PermissionError):
        try:  # the leader is gone: its group may still have members
            os.killpg(int(pid), sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False
