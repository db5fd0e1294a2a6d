"""Starting a run folder's training (its ``accelerate launch`` command) and its evaluation
(``python -m sga_core eval RUN_DIR``) as detached processes, and recording how they ended.

The runner (:mod:`sga_core.runs.runner`) and the CLI's foreground runs both go through
:func:`start` and :func:`reap`, so a launcher that dies is handled the same way everywhere:
its trainer is stopped with it, and the run is failed only once nothing of it still runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from sga_core.fileio import now_iso
from sga_core.runs import status as run_status
from sga_core.runs.command import start_argv
from sga_core.runs.folder import RunFolder, request_cancel
from sga_core.runs.jobs import base as jobs
from sga_core.runs.jobs import evaluation, stress
from sga_core.runs.memory import exit_cause
from sga_core.runs.procs import caller_env, kill_group, pid_alive, spawn
from sga_core.runs.status import FINAL_STATES


def start(run_dir: str | os.PathLike, foreground: bool = False,
          resume: bool | None = None) -> subprocess.Popen:
    """Start training for a prepared run folder; returns the launcher's Popen (not waited
    for): ``accelerate launch``, or for one process the trainer itself
    (:func:`~sga_core.runs.command.start_argv`). Training runs at the niceness of the caller
    (the runner is already niced). ``foreground``: the run belongs to this process, and its
    trainer stops (cancelled) once this process is gone, even killed with SIGKILL; a queued
    run outlives its runner. ``resume``: continue from the newest checkpoint (None: when
    status.json asks for it, :func:`request_resume`)."""
    run_dir = Path(run_dir).resolve()
    run = RunFolder(run_dir)
    argv, env = start_argv(run.config(), str(run.config_path))
    if resume is None:
        resume = run_status.read_run(run_dir).get("resume") is True
    if resume:
        argv.append("--resume")
    if foreground:
        env = {**env, **caller_env()}
    proc = spawn(argv, run.train_log_path, env=env, nice=0)
    run_status.write_run(run_dir, "running", launcher_pid=proc.pid,
                         launcher_pid_start=proc.sga_record["start"], pid=None,
                         started_at=now_iso(), host=os.uname().nodename, resume=None)
    return proc


def request_resume(run_dir: str | os.PathLike, mode: str) -> dict:
    """Make a failed or cancelled run with a checkpoint startable again as a resume (its
    next :func:`start` passes ``--resume``): the cancel request is dropped and the run is
    queued (``mode`` "queue": the runner starts it; "foreground": its caller does). The
    local backend's resume; :func:`sga_core.runs.queue.resume` chooses the backend.

    Everything is checked before anything is written (:func:`check_resumable`); a run that
    cannot be resumed is a ValueError saying why, and the run is left as it was."""
    check_resumable(run_dir)
    RunFolder(run_dir).cancel_path.unlink(missing_ok=True)
    return run_status.write_run(run_dir, "queued", resume=True, mode=mode,
                                queued_ns=time.time_ns(), ended_at=None, exit_code=None)


def check_resumable(run_dir: str | os.PathLike, processes=None):
    """Every check a resume makes before it changes anything, whichever backend runs it:
    the run's state, its config, and its newest checkpoint against that config
    (:func:`~sga_core.runs.checkpoints.check_resume`; ``processes(cfg)``: how many
    processes the resumed training will have, None where its accelerate config file says;
    default: the run's own launch). Returns the run's config; a run that cannot be resumed
    is a ValueError saying why (naming the file at fault). (A run stopped at its time limit
    is failed, and resumable.)"""
    from sga_core.config import ConfigError
    from sga_core.runs import checkpoints
    from sga_core.runs.backends import backend_of

    run_dir = Path(run_dir)
    st = run_status.effective_run(run_dir)
    if st.get("state") not in checkpoints.RESUMABLE_STATES:
        raise ValueError(f"run {run_dir.name} is {st.get('state') or 'unknown'}: only a "
                         "failed, cancelled or timed-out run can be resumed (a run stopped "
                         "at its time limit is recorded as failed)")
    unsure = backend_of(st).unsure_reason(st)
    if unsure:
        raise ValueError(f"run {run_dir.name}: {unsure}")
    if checkpoints.latest(run_dir) is None:
        raise ValueError(f"run {run_dir.name} has no checkpoint to resume from (set "
                         "training.save_every, or stop it with SIGTERM/SIGUSR1)")
    try:
        cfg = RunFolder(run_dir).config()
    except ConfigError as exc:
        raise ValueError(f"cannot resume run {run_dir.name}: its config.yaml: {exc}") from None
    checkpoints.check_resume(run_dir, cfg, num_processes=processes(cfg) if processes else
                             cfg.launch.num_processes if not cfg.launch.config_file else None)
    return cfg


def reap(run_dir: str | os.PathLike, proc: subprocess.Popen) -> bool:
    """Whether the run started as ``proc`` is over, recording its end once it is. A launcher
    that exited while its trainer still runs (the launcher was killed) has its process group
    killed, and the run counts as over only when the trainer is gone too."""
    if proc.poll() is None:
        return False
    st = run_status.read_run(run_dir)
    if st.get("state") not in FINAL_STATES and pid_alive(st.get("pid"), st.get("pid_start")):
        if proc.returncode != 0:
            kill_group(proc, signal.SIGKILL)
        return False
    finish(run_dir, proc.returncode)
    return True


def finish(run_dir: str | os.PathLike, returncode: int) -> dict:
    """Record the exit of the launcher; a run that did not reach a final state is failed."""
    run_dir = Path(run_dir)
    st = run_status.read_run(run_dir)
    if st.get("state") in FINAL_STATES:
        if st.get("state") != "failed" or st.get("exit_code") is None:
            return run_status.write_run(run_dir, exit_code=returncode if returncode else
                                        st.get("exit_code", 0))
        return st
    cause = exit_cause(returncode, run_dir)
    return run_status.write_run(
        run_dir, "failed", ended_at=now_iso(), exit_code=returncode,
        error=f"the training process {cause} before finishing; log tail:\n"
              f"{RunFolder(run_dir).train_log(15)}")


@contextlib.contextmanager
def sigterm_as_interrupt():
    """While open, SIGTERM to this process (a foreground ``train`` / ``prepare`` stopped by
    ``kill``, a job scheduler or a closed terminal's shell) acts as Ctrl-C: the run is
    cancelled cleanly instead of leaving its trainer running without its caller."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run_foreground(run_dir: str | os.PathLike, echo=print, poll_s: float = 0.25,
                   evaluate: bool | None = None, resume: bool = False) -> dict:
    """Start a run and wait for it, echoing progress lines; Ctrl-C (or SIGTERM to this
    process) cancels it cleanly.

    A run that completes is then evaluated (``python -m sga_core eval RUN_DIR``, output in
    eval.log) when ``evaluate`` is True, or when it is None and the config's
    ``eval.enabled`` is true. ``resume``: continue from the newest checkpoint. Returns
    :func:`sga_core.runs.status.run_view`."""
    run_dir = Path(run_dir)
    proc = start(run_dir, foreground=True, resume=resume or None)
    seen = 0
    try:
        with sigterm_as_interrupt():
            while not reap(run_dir, proc):
                time.sleep(poll_s)
                seen = _echo_new_lines(RunFolder(run_dir).train_log_path, seen, echo)
    except KeyboardInterrupt:
        echo("cancelling (waiting for the current step to end)...")
        request_cancel(run_dir)
        proc.wait()
        while not reap(run_dir, proc):
            time.sleep(poll_s)
    _echo_new_lines(RunFolder(run_dir).train_log_path, seen, echo)
    completed = run_status.effective_run(run_dir).get("state") == "completed"
    if completed and (should_evaluate(run_dir) if evaluate is None else evaluate):
        run_eval_foreground(run_dir, echo=echo, poll_s=poll_s)
    return run_status.run_view(run_dir)


def cancelled_after_exit(run_dir: Path) -> None:
    """A run whose launcher ended after a cancel request is cancelled (unless it finished)."""
    st = run_status.read_run(run_dir)
    if RunFolder(run_dir).cancel_requested() and st.get("state") not in ("completed",
                                                                         "diverged"):
        run_status.write_run(run_dir, "cancelled", ended_at=st.get("ended_at") or now_iso(),
                             error="cancelled by request")


# --- evaluation after training (sga_core.evaluation) -----------------------------------------

def eval_argv(run_dir: str | os.PathLike, sets: dict[str, str] | None = None,
              protocol: str | None = None) -> list[str]:
    """The evaluation command of a run folder, as an argument list (``sets``: extra
    evaluation sets, name -> file, besides the run's own; ``protocol``: instead of the
    run's eval.protocol)."""
    return evaluation.argv(Path(run_dir), {"sets": sets or {}, "protocol": protocol})


def should_evaluate(run_dir: str | os.PathLike) -> bool:
    """True for a completed run with a saved model whose config has ``eval.enabled``, and
    that was not evaluated already (in its training process: ``eval.in_process``)."""
    run = RunFolder(run_dir)
    if run_status.read_run(run_dir).get("state") != "completed":
        return False
    if run_status.read_eval(run_dir).get("state"):
        return False  # the training process evaluated it (or is evaluating it)
    if not run.has_model():
        return False
    try:
        return bool(run.config().eval.enabled)
    except Exception:  # a config that no longer loads is not evaluated automatically
        return False


def start_eval(run_dir: str | os.PathLike, sets: dict[str, str] | None = None,
               foreground: bool = False, protocol: str | None = None) -> subprocess.Popen:
    """Start ``python -m sga_core eval RUN_DIR`` (:func:`sga_core.runs.jobs.base.start`):
    eval/status.json says running at once. Returns the Popen (not waited for).
    ``foreground``: it stops (cancelled) once this process is gone, as :func:`start`."""
    return jobs.start(evaluation.KIND, run_dir, {"sets": sets or {}, "protocol": protocol},
                      foreground=foreground)


def finish_eval(run_dir: str | os.PathLike, returncode: int) -> dict:
    """Record the end of an evaluation process (:func:`sga_core.runs.jobs.base.finish`): one
    that died without saying so is failed, or cancelled when a cancel was asked for; a
    completed evaluation stays completed (its summary is written)."""
    return jobs.finish(evaluation.KIND, run_dir, returncode)


def run_eval_foreground(run_dir: str | os.PathLike, echo=print, poll_s: float = 1.0) -> dict:
    """Evaluate a run folder in a subprocess and wait, echoing its progress lines; Ctrl-C
    stops the evaluation (the run itself stays completed)."""
    run_dir = Path(run_dir)
    log = RunFolder(run_dir).eval_log_path
    echo(f"evaluating {run_dir.name} (log: {log})")
    seen = log.stat().st_size if log.exists() else 0
    proc = start_eval(run_dir, foreground=True)
    try:
        with sigterm_as_interrupt():  # SIGTERM to this process stops the evaluation too
            while proc.poll() is None:
                time.sleep(poll_s)
                seen = _echo_new_lines(log, seen, echo)
    except KeyboardInterrupt:
        echo("stopping the evaluation...")
        kill_group(proc, signal.SIGTERM)
        proc.wait()
        if run_status.read_eval(run_dir).get("state") == "running":  # it could not say so
            run_status.write_eval(run_dir, "cancelled", ended_at=now_iso(),
                                  error="evaluation interrupted")
    _echo_new_lines(log, seen, echo)
    st = finish_eval(run_dir, proc.returncode)
    echo(f"evaluation {st.get('state')}" + (f": {st['error']}" if st.get("error") else ""))
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


# --- stress tests queued as jobs (sga_core.stress, docs/stress-tests.md) -----------------------

#: the stress command's options besides the attacks' settings that a request may carry
STRESS_OPTIONS = stress.OPTIONS


def stress_argv(run_dir: str | os.PathLike, attacks: list[str],
                settings: dict | None = None, options: dict | None = None) -> list[str]:
    """The stress-test command of a run folder, as an argument list: ``python -m sga_core
    stress RUN_DIR --attacks a,b`` with the attacks' ``settings`` and ``options``."""
    return stress.argv(Path(run_dir), {"attacks": list(attacks), "settings": settings or {},
                                       "options": options or {}})


def start_stress(run_dir: str | os.PathLike, attacks: list[str], settings: dict | None = None,
                 options: dict | None = None) -> subprocess.Popen:
    """Start a run's stress test (:func:`sga_core.runs.jobs.base.start`);
    stress_status.json says running at once, with a fresh record."""
    return jobs.start(stress.KIND, run_dir, {"attacks": list(attacks),
                                             "settings": settings or {},
                                             "options": options or {}})


def finish_stress(run_dir: str | os.PathLike, returncode: int) -> dict:
    """Record the end of a stress-test process (:func:`sga_core.runs.jobs.base.finish`)."""
    return jobs.finish(stress.KIND, run_dir, returncode)
