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
from sga_core.runs.offline import OFFLINE_ENV

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
    ``PYTHONPATH``, and no secret (docs/spec.md#7-engineering-rules) unless ``extra`` passes one on
    purpose."""
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
    its process-group id, and its ``sga_record`` (:func:`record`) what proves it later."""
    log = Path(log)
    log.parent.mkdir(parents=True, exist_ok=True)
    full = nice_prefix(nice) + resolve_argv(argv)
    with open(log, "ab" if append else "wb") as fh:
        proc = subprocess.Popen(full, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=child_env(env),
                                start_new_session=True)
    # who it is, taken before anyone reaps it: its pid alone may later name another process
    proc.sga_record = record(proc.pid)
    return proc


# set by a foreground caller (``train`` / ``prepare`` / ``eval`` in a terminal) to
# ``host:pid:start``: the trainer or evaluation it started stops, cancelled, once that
# process is gone (killed with SIGKILL, which it cannot catch); the child is in its own
# session
CALLER_ENV = "SGA_FOREGROUND_CALLER"
#: What every process the workbench starts has in its command line: the proof, for a pid
#: recorded without a start time, that it is still ours.
OUR_COMMAND = "sga_core"


def caller_env() -> dict[str, str]:
    """The environment that ties a child process to this one, its foreground caller."""
    start = start_time(os.getpid())
    return {CALLER_ENV: f"{socket.gethostname()}:{os.getpid()}:{'' if start is None else start}"}


def foreground_caller() -> dict | None:
    """The process record (:func:`record`) of the foreground process that started this one
    (:func:`caller_env`), when it runs on this host; None otherwise (a queued run,
    command.sh, another machine)."""
    host, _, rest = os.environ.get(CALLER_ENV, "").partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    return {"pid": int(pid), "start": int(start) if start.isdigit() else None}


def caller_gone(caller: dict | None) -> bool:
    """Whether the foreground caller ``caller`` (:func:`foreground_caller`) has exited."""
    return caller is not None and not pid_alive(caller.get("pid"), caller.get("start"))


# --- which process a recorded pid is -------------------------------------------------------
# A pid on disk may outlive its process: the kernel hands it to the next process that
# starts (on a default Linux after 32768 others), and junk in a status file (-1, 0, "abc",
# 10**30) is no process at all. ``kill(-1, sig)`` signals every process the user may
# signal and ``kill(0, sig)`` this process's own group, so nothing here ever passes a pid
# to os.kill without checking it first: a pid counts as a recorded process only while its
# start time (clock ticks since boot, /proc/PID/stat) is the one recorded beside it.

def pid_max() -> int:
    """The largest pid this system hands out."""
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        return 4194304  # the Linux limit


def valid_pid(pid) -> int | None:
    """``pid`` when it can name another process (an int, not a bool, from 2 to
    :func:`pid_max`); None for anything else (0, 1 = init, negatives = process groups)."""
    if type(pid) is not int or not 1 < pid <= pid_max():
        return None
    return pid


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()
    except (OSError, ValueError):
        return None


def start_time(pid) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (None when there is no such
    process): with the pid, the identity of a process (a reused pid starts later)."""
    pid = valid_pid(pid)
    if pid is None:
        return None
    fields = _stat_fields(pid)
    if fields is not None:
        try:
            return int(fields[19])
        except (IndexError, ValueError):
            return None
    try:  # no /proc (not Linux): psutil's start time, in hundredths of a second
        import psutil

        return int(psutil.Process(pid).create_time() * 100)
    except Exception:  # noqa: BLE001 - no such process, or psutil missing
        return None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            "utf-8", "replace")
    except OSError:
        try:
            import psutil

            return " ".join(psutil.Process(pid).cmdline())
        except Exception:  # noqa: BLE001
            return ""


def record(pid) -> dict:
    """A process's record, kept beside its pid so that it can later be told from a process
    that got the same pid: ``{"pid", "start"}`` (``start`` None when it is already gone)."""
    return {"pid": pid, "start": start_time(pid)}


def recorded(status: dict, key: str = "pid") -> dict:
    """The process record a status file keeps under ``key`` (its pid) and ``key_start``
    (its start time, written beside every pid: :func:`start_fields`)."""
    return {"pid": status.get(key), "start": status.get(f"{key}_start")}


def start_fields(fields: dict, keys: tuple[str, ...]) -> dict:
    """``fields`` plus ``<key>_start`` beside each pid ``key`` it sets (unless given), so
    that a status file never holds a pid without the start time that identifies it."""
    out = dict(fields)
    for key in keys:
        if key in out and f"{key}_start" not in out:
            out[f"{key}_start"] = start_time(out[key])
    return out


def _zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] == "Z"


def pid_alive(pid, start=None) -> bool:
    """Whether the process recorded as ``pid`` (and ``start``, its :func:`start_time`, when
    known) still runs: False for a pid that names no process (junk, 0, 1, negative), a
    zombie, and a pid now used by another process (its start time differs)."""
    pid = valid_pid(pid)
    if pid is None:
        return False
    if start is not None:
        return start_time(pid) == start and not _zombie(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def is_ours(rec: dict) -> bool:
    """Whether the process ``rec`` (:func:`record`) names is the one recorded: its start
    time matches; for an old record without one, its command line runs ``sga_core``."""
    pid = valid_pid(rec.get("pid"))
    if pid is None or not pid_alive(pid, rec.get("start")):
        return False
    return rec.get("start") is not None or OUR_COMMAND in _cmdline(pid)


def _group_members(pgid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields and len(fields) > 19 and fields[2] == str(pgid) and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def group_is_ours(rec: dict) -> bool:
    """Whether process group ``rec["pid"]`` is still the one that process led (a process
    :func:`spawn` started leads its own group). While its leader lives, the leader must be
    ours (:func:`is_ours`). Once the leader is gone the kernel gives its pid to no new
    process while the group has members, so the members left are its own; they must have
    started no earlier than the leader (and, without a recorded start, run ``sga_core``)."""
    pid = valid_pid(rec.get("pid"))
    if pid is None:
        return False
    if pid_alive(pid):
        return is_ours(rec) and os.getpgid(pid) == pid
    members = _group_members(pid)
    if not members:
        return False
    if rec.get("start") is not None:
        return all((start_time(m) or -1) >= rec["start"] for m in members)
    return all(OUR_COMMAND in _cmdline(m) for m in members)


def signal_ours(rec: dict | subprocess.Popen | None, sig: int, group: bool = False) -> bool:
    """Send ``sig`` to the process ``rec`` (a :func:`record`, or the Popen :func:`spawn`
    returned) names, or with ``group`` to its process group, only once it is proven still
    ours (:func:`is_ours`, :func:`group_is_ours`); never to pid 0, 1, a negative or
    non-integer pid. True when the signal was sent."""
    if isinstance(rec, subprocess.Popen):
        # a child not yet reaped keeps its pid: it is ours now; reaped, only its record tells
        rec = getattr(rec, "sga_record", None) or (
            record(rec.pid) if rec.poll() is None else None)
    if not isinstance(rec, dict) or valid_pid(rec.get("pid")) is None:
        return False
    pid = rec["pid"]
    try:
        if group:
            if not group_is_ours(rec):
                return False
            os.killpg(pid, sig)
        else:
            if not is_ours(rec):
                return False
            os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def group_alive(pgid: int | None) -> bool:
    """Whether any process of process group ``pgid`` is alive (zombies aside)."""
    pgid = valid_pid(pgid)
    return pgid is not None and bool(_group_members(pgid))


def kill_group(rec, sig: int = signal.SIGTERM) -> bool:
    """Send ``sig`` to the process group that the process ``rec`` (a :func:`record` or the
    Popen :func:`spawn` returned) leads, when it is still that group
    (:func:`signal_ours`); False when it is gone or not ours."""
    return signal_ours(rec, sig, group=True)


# --- status records ---------------------------------------------------------------------------

# the processes whose life a running record stands for
RUN_PIDS = ("launcher_pid", "pid")
EVAL_PIDS = ("pid",)


def derive(status: dict, pid_keys: tuple[str, ...], what: str,
           cancel_asked: bool = False) -> dict:
    """``status`` as it should be shown: "running" while any of its processes lives (on this
    host), "failed" once all of them are gone, or "cancelled" when a cancel was asked
    (``cancel_asked``, or ``cancel_requested_at`` in the record): what its writer records
    once it notices, shown at once. Pure: nothing is written."""
    if status.get("state") != "running":
        return status
    host = status.get("host")
    if isinstance(host, str) and host and host != socket.gethostname():
        return status  # a run on another machine: only its own files can tell
    procs = [recorded(status, k) for k in pid_keys if status.get(k)]
    # a process counts only while it is the one recorded: its start time, or for an old
    # record without one, a command line that runs sga_core (a stranger given the pid is not)
    if not procs or any(is_ours(p) for p in procs):
        return status
    if cancel_asked or status.get("cancel_requested_at"):
        return {**status, "state": "cancelled", "vanished": True,
                "error": "cancelled by request"}
    return {**status, "state": "failed", "vanished": True,
            "error": status.get("error") or f"the {what} process vanished (killed or the "
                                            "machine restarted)"}
