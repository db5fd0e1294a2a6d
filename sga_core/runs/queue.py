"""The job queue: run folders in state ``queued`` are the queue (on disk, so two browser tabs
that press Launch at once get two queued runs, never a clash), and one runner process
(``python -m sga_core.runs.runner``) starts them one at a time by default.

Cancel is staged: the ``CANCEL`` file (the trainer stops at the next step boundary), then
SIGTERM to the run's process group after a grace period, then SIGKILL.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import socket
import time
from pathlib import Path

from sga_core.fileio import dir_lock, now_iso, read_json, remove_dir
from sga_core.runs import status as run_status
from sga_core.runs.backends import backend, backend_of
from sga_core.runs.create import create_run
from sga_core.runs.folder import CANCEL_FILE, EVAL_REQUEST, RunFolder, request_cancel, runs_root
from sga_core.runs.jobs import kind, run_kinds
from sga_core.runs.jobs.evaluation import refusal as eval_refusal
from sga_core.runs.listing import list_runs, stress_state
from sga_core.runs.procs import is_ours, recorded, spawn
from sga_core.runs.status import FINAL_STATES
from sga_core.stress.attacks import default_attacks

RUNNER_LOCK = ".runner.lock"
RUNNER_INFO = ".runner.json"


def queued_runs(root: Path) -> list[Path]:
    """Queued run folders, in submission order."""
    rows = [r for r in list_runs(root) if r["state"] == "queued" and r.get("mode") == "queue"]
    rows.sort(key=lambda r: (r.get("created_at") or "",
                             r.get("queued_ns") or 0, r["run_id"]))
    return [Path(r["path"]) for r in rows]


def runner_alive(root: Path) -> bool:
    """True while some runner holds the queue lock. The probe takes the lock shared, so two
    probes (two pages, a page and the CLI) never see each other as a runner; a runner
    starting while a probe holds it waits the probe out (:func:`take_runner_lock`)."""
    lock = Path(root) / RUNNER_LOCK
    if not lock.exists():
        return False
    with open(lock, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


#: how long a starting runner tries for the queue lock: a probe holds it for an instant,
#: another runner for as long as it serves the folder
LOCK_WAIT_S = 5.0


def take_runner_lock(fh, wait_s: float = LOCK_WAIT_S, poll_s: float = 0.05) -> bool:
    """Take the queue lock (``fh``, the open ``.runner.lock``) exclusively: True once held;
    False when it is still taken after ``wait_s`` seconds (another runner serves the
    folder). The retries let a probe of :func:`runner_alive` pass, which would otherwise make
    a runner started in that instant exit and leave the queue with none."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)


def awaiting_evaluation(runs: list[dict], root: str | os.PathLike | None = None) -> bool:
    """Whether the runner is about to evaluate one of ``runs`` (rows of :func:`list_runs`):
    a completed run with no evaluation state yet that asks for one
    (:func:`~sga_core.runs.launch.should_evaluate`), while a runner is alive. Training writes
    "completed" and the runner starts the evaluation when it next reaps the run, so a page
    that stopped following the run in between would miss the evaluation."""
    from sga_core.runs.launch import should_evaluate

    pending = [r for r in runs if r.get("state") == "completed" and not r.get("eval_state")]
    return bool(pending) and runner_alive(runs_root(root)) and \
        any(should_evaluate(r["path"]) for r in pending)


def ensure_runner(root: str | os.PathLike | None = None, max_parallel: int = 1,
                  idle_exit_s: float = 120.0) -> int | None:
    """Start a detached runner for ``root`` unless one is alive; returns its pid if started.
    The runner (and so every training and evaluation it starts) runs niced."""
    root = runs_root(root)
    root.mkdir(parents=True, exist_ok=True)
    if runner_alive(root):
        return None
    proc = spawn(["python", "-m", "sga_core.runs.runner", "--runs-dir", str(root),
                  "--max-parallel", str(max_parallel), "--idle-exit", str(idle_exit_s)],
                 root / ".runner.log")
    return proc.pid


def submit(cfg, root: str | os.PathLike | None = None, start_runner: bool = True,
           max_parallel: int = 1) -> Path:
    """Create a queued run folder for ``cfg`` and make sure a runner will pick it up."""
    run_dir = create_run(cfg, root, state="queued", mode="queue")
    if start_runner:
        ensure_runner(run_dir.parent, max_parallel=max_parallel)
    return run_dir


def preview(cfg, root: str | os.PathLike | None = None) -> tuple[str, str, str]:
    """(run id, the exact launch command, config.yaml) of a config about to be launched."""
    from sga_core.config import dump_config
    from sga_core.runs.command import command_text
    from sga_core.runs.create import check_forget_rows, check_model, make_run_id

    check_forget_rows(cfg)  # what the launch would refuse, said now
    check_model(cfg)
    root = runs_root(root)
    cfg.run_id = cfg.run_id or make_run_id(cfg, root)
    return cfg.run_id, command_text(cfg, root / cfg.run_id), dump_config(cfg)


def cancel(run_dir: str | os.PathLike) -> dict:
    """Ask a run's training to stop, wherever it runs (its backend:
    :mod:`sga_core.runs.backends`); one that ended is left as it is."""
    run_dir = Path(run_dir)
    st = run_status.effective_run(run_dir)
    if st.get("state") in FINAL_STATES and not backend_of(st).unsure(st):
        return st
    return backend_of(st).cancel(kind("run"), run_dir)


def cancel_training(run_dir: str | os.PathLike) -> dict:
    """Stop a run's training on this machine's queue. A queued run is cancelled by the
    runner before it starts; a running one stops at its next step boundary (escalated by the
    runner if it does not). The request and the runner's start of a queued run are made
    under the run folder's lock, so a run is either started before the request (and stops
    at its first step) or never."""
    run_dir = Path(run_dir)
    with dir_lock(run_dir):
        request_cancel(run_dir)
        st = run_status.effective_run(run_dir)
        if st.get("state") == "queued" and not runner_alive(run_dir.parent):
            return run_status.write_run(run_dir, "cancelled", ended_at=now_iso(),
                                        error="cancelled before it started")
    return run_status.effective_run(run_dir)


def cancel_job(key: str, run_dir: str | os.PathLike) -> dict:
    """Stop a run's job of kind ``key`` ("eval", "stress"; the run and its model stay as
    they are), wherever it runs: one asked for and not started yet is dropped and never
    starts; a running one is stopped (:func:`sga_core.runs.jobs.base.cancel` on this
    machine, ``scancel`` on SLURM). A drop and the runner's claim of the request hold the
    run folder's lock, so a job is either never started or started and then stopped.
    Returns the job's status."""
    run_dir = Path(run_dir)
    k = kind(key)
    return backend_of(k.effective(run_dir)).cancel(k, run_dir)


def cancel_eval(run_dir: str | os.PathLike) -> dict:
    """Stop a run's evaluation (:func:`cancel_job`)."""
    return cancel_job("eval", run_dir)


#: a prepared model's run id (:mod:`sga_core.runs.prepared_ids`): ``<name>-<role>``, or for
#: a name without a plain id ``<stem>-<role>-<10 hex digits>``
_PREPARED_ID = re.compile(r"-(original|retain-ref)(-[0-9a-f]{10})?$")
PREPARED_ROLES = {"original": "Original", "retain-ref": "Retained"}


def prepared_role(run_dir: str | os.PathLike) -> str | None:
    """"Original" or "Retained" for a project's prepared model (a ``prepare`` run: its id is
    a prepared id and its config a prepare fine-tune), None for any other run. The project
    finds these by their run id, so a re-run must keep it (:func:`rerun`)."""
    m = _PREPARED_ID.search(Path(run_dir).name)
    if m is None:
        return None
    try:
        cfg = RunFolder(run_dir).config_dict()
    except Exception:  # noqa: BLE001 - a damaged config is no prepared model we can re-run
        return None
    notes = cfg.get("notes")
    if cfg.get("method") != "finetune" or not (isinstance(notes, str)
                                               and notes.startswith("prepare:")):
        return None
    return PREPARED_ROLES[m.group(1)]


def rerun(run_dir: str | os.PathLike, root: str | os.PathLike | None = None,
          replace: bool = False) -> Path:
    """Queue a new run with the same config as ``run_dir`` (data from its snapshot). A
    project's prepared model (:func:`prepared_role`) is re-run in place, under its own run
    id, so that the project still finds it as its Original or Retained model: that replaces
    the folder, so it needs ``replace`` (ValueError saying so without it), and is refused
    while anything of the run still runs or waits (:func:`live_jobs`)."""
    run_dir = Path(run_dir)
    if RunFolder(run_dir).published_path.exists():  # sga_core.projects.published_eval
        raise ValueError(f"{run_dir.name} is the evaluation of a published model: nothing "
                         "was trained in it, so there is nothing to re-run; evaluate it "
                         "again instead")
    role = prepared_role(run_dir)
    cfg = RunFolder(run_dir).config()
    for name in ("forget", "retain", "normals"):
        p = cfg.resolve(getattr(cfg.data, name))
        if p is not None:
            setattr(cfg.data, name, str(p))
    cfg.eval.sets = {k: str(cfg.resolve(v)) for k, v in cfg.eval.sets.items()}
    cfg.base_dir = ""
    if role is None:
        cfg.run_id = ""
        return submit(cfg, root or run_dir.parent)
    if not replace:
        raise ValueError(f"{run_dir.name} is the project's {role} model: re-running it "
                         "replaces it in place (the same run id, which the project uses); "
                         "confirm the replacement to go on")
    return replace_run(run_dir, cfg, root)


def replace_run(run_dir: str | os.PathLike, cfg, root: str | os.PathLike | None = None
                ) -> Path:
    """Queue ``cfg`` in ``run_dir``'s place, under the same run id (a prepared model run
    again). Refused (RuntimeError naming what) while anything of the run still runs or waits
    (:func:`live_jobs`): its processes would write into the new folder. The old folder is
    moved aside first (its data snapshot is what ``cfg`` reads) and put back if the new one
    cannot be made; removed once it is."""
    run_dir = Path(run_dir)
    root = runs_root(root or run_dir.parent)
    why = live_jobs(run_dir)
    if why:
        raise RuntimeError(f"{run_dir.name} cannot be replaced now: {'; '.join(why)}")
    aside = run_dir.with_name(f".{run_dir.name}.old")  # put back by clean_leftovers on a crash
    shutil.rmtree(aside, ignore_errors=True)
    os.rename(run_dir, aside)

    def moved(path):
        p = Path(path)
        return str(aside / p.relative_to(run_dir)) if p.is_relative_to(run_dir) else path

    for name in ("forget", "retain", "normals"):
        if getattr(cfg.data, name):
            setattr(cfg.data, name, moved(getattr(cfg.data, name)))
    cfg.eval.sets = {k: moved(v) for k, v in cfg.eval.sets.items()}
    cfg.run_id = run_dir.name
    try:
        new = create_run(cfg, root, state="queued", mode="queue")
    except BaseException:
        if not run_dir.exists():
            os.rename(aside, run_dir)
        raise
    shutil.rmtree(aside, ignore_errors=True)
    ensure_runner(root)
    return new


def busy_refusal(root: str | os.PathLike, run_ids) -> str | None:
    """Why the run folders ``run_ids`` under ``root`` may not be replaced now (None: they
    may): anything of theirs still runs or waits (:func:`live_jobs`), and its processes
    would write into the new run and hold the queue's slot."""
    busy = {run_id: why for run_id in run_ids if (why := live_jobs(Path(root) / run_id))}
    if not busy:
        return None
    return ("cannot prepare again now: " + "; ".join(
        f"{run_id}: {', '.join(why)}" for run_id, why in busy.items()) +
        " (cancel it, or wait for it to end)")


def live_jobs(run_dir: str | os.PathLike, processes: bool = True) -> list[str]:
    """What still runs in, or waits for, a run folder (empty: nothing): its training queued
    or running, its evaluation or stress test queued or running (one cancelled and still
    stopping included), or a process it records that still runs on this machine. A folder
    with a live job must not be replaced (``prepare``, :func:`replace_run`): its processes
    would go on writing into the new folder, and the runner's slot stay taken by them.
    ``processes``: also look for recorded processes still alive (not only states)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    out = []
    for k in run_kinds():
        shown = k.effective(run_dir)
        state = shown.get("state")
        if state == "running":
            out.append(f"its {k.name} is " + ("still stopping (cancel requested)"
                                              if shown.get("cancel_requested_at")
                                              and k.request else "running"))
        elif state == "queued" or k.requested(run_dir):
            out.append(f"its {k.name} is queued")
    if out or not processes:
        return out
    for k in run_kinds():
        status = k.read_status(run_dir)
        if status.get("host") not in (None, socket.gethostname()):
            continue
        alive = [status[p] for p in k.pids if status.get(p) and is_ours(recorded(status, p))]
        if alive:
            out.append(f"its {k.name} process (pid {alive[0]}) still runs")
    return out


#: why a job queued on this machine waits when nothing serves the queue
NO_RUNNER = ("no queue runner is running (it is started by the Runs page, a launch, or "
             "python -m sga_core.runs.runner)")


def slot_doing(root: Path, slot: dict) -> str:
    """What the job holding a runner slot is doing, in a word or two: its kind ("training",
    "evaluation", "stress test"), except a training process that evaluates its run in
    process once trained (``eval.in_process``): "evaluating" then, not "training"."""
    job = str(slot.get("job"))[:20]
    run_id = str(slot.get("run_id") or "")
    if job != kind("run").name or not run_id or "/" in run_id or run_id.startswith("."):
        return job
    try:
        ev = run_status.read_eval(root / run_id)
    except Exception:  # noqa: BLE001 - a damaged status: its kind is all that is known
        return job
    return "evaluating after training" if ev.get("state") == "running" else job


def slots_full(root: Path, info: dict | None = None) -> str | None:
    """"waiting for a free slot: 1 of 1 in use by X (evaluation)" when every slot of the
    runner of ``root`` is taken (``info``: :func:`runner_info`, read when not given), else
    None."""
    info = runner_info(root) if info is None else info
    slots = [s for s in info.get("slots") or [] if isinstance(s, dict)] \
        if isinstance(info.get("slots"), list) else []
    most = info.get("max_parallel")
    most = most if type(most) is int and most > 0 else 1
    if len(slots) < most:
        return None
    held = ", ".join(f"{str(s.get('run_id'))[:80]} ({slot_doing(root, s)})"
                     for s in slots[:5])
    return f"waiting for a free slot: {len(slots)} of {most} in use by {held}"


def job_wait_reason(run_dir: str | os.PathLike) -> str:
    """Why an evaluation or a stress test queued on this machine has not started: no
    runner serves the queue, or every slot is taken (by which runs, doing what); else
    "starting" (the runner takes it at its next look)."""
    root = runs_root(Path(run_dir).parent)
    if not runner_alive(root):
        return NO_RUNNER
    return slots_full(root) or "starting"


def wait_reason(run_dir: str | os.PathLike, root: str | os.PathLike | None = None
                ) -> str | None:
    """Why a run queued on this machine's queue has not started (None for any other run):
    no runner serves the queue, every slot is taken (by which runs, doing what), runs
    queued before it go first, or a cancel drops it before it starts."""
    run_dir = Path(run_dir)
    root = runs_root(root or run_dir.parent)
    st = run_status.effective_run(run_dir)
    if st.get("state") != "queued" or st.get("mode") != "queue" or \
            backend_of(st) is not backend():
        return None
    if RunFolder(run_dir).cancel_requested():
        return "cancel requested: it is dropped before it starts"
    if not runner_alive(root):
        return NO_RUNNER
    # the runner holds it: the memory check (runs/memory.py), or the run whose model it
    # trains from has none yet (runs/upstream.py)
    if st.get("waiting_for"):
        return str(st["waiting_for"])
    info = runner_info(root)
    # the queue's order as the runner last read it: a page asks this of every queued run
    # each second, so it never lists the runs folder itself
    seen = info.get("queue") if isinstance(info.get("queue"), list) else []
    seen = [q for q in seen if isinstance(q, str)]
    ahead = seen[:seen.index(run_dir.name)] if run_dir.name in seen else seen
    before = f"; {len(ahead)} queued before it" if ahead else ""
    full = slots_full(root, info)
    if full:
        return full + before
    if ahead:
        return f"waiting for {len(ahead)} run(s) queued before it"
    return "starting"


def resume(run_dir: str | os.PathLike, root: str | os.PathLike | None = None,
           here: bool = False, workspace=None) -> dict:
    """Continue a failed, cancelled or timed-out run that has a checkpoint from it, in its
    own folder, on the backend it ran on (:meth:`Backend.resume
    <sga_core.runs.backends.base.Backend.resume>`; ValueError saying why when it cannot, the
    run then left as it was): a SLURM run is resubmitted to SLURM with its profile (refused
    when SLURM is not available here, never run on this machine instead); a local run is
    queued for this machine's runner, or with ``here`` made ready for its caller to run
    (``train --resume`` without ``--queue``). Returns the run's status: its ``mode`` says
    which ("slurm", "queue" or "foreground")."""
    run_dir = Path(run_dir)
    return backend_of(run_status.read_run(run_dir)).resume(run_dir, root=root, here=here,
                                                            workspace=workspace)


def job_backend(run_dir: str | os.PathLike):
    """Where a new job of a trained run goes (its evaluation, a stress test): the backend
    its training ran on, or this machine's queue where that backend is not available now."""
    b = backend_of(run_status.read_run(run_dir))
    return backend() if b.unavailable() else b


def delete(run_dir: str | os.PathLike) -> None:
    """Delete a run folder; refused (RuntimeError naming what) while any job of it is
    queued or running (:func:`live_jobs`: its training, evaluation or stress test): cancel
    it first."""
    run_dir = Path(run_dir)
    why = live_jobs(run_dir, processes=False)
    if why:
        raise RuntimeError(f"run {run_dir.name} cannot be deleted now: {'; '.join(why)} "
                           "(cancel it first)")
    remove_dir(run_dir)  # a status its ending job writes meanwhile stops nothing


def runner_info(root: str | os.PathLike | None = None) -> dict:
    """What the runner of ``root`` says of itself: pid, max_parallel, and ``slots`` (the
    jobs holding its slots: run_id, job); {} when there is none or it cannot be read."""
    try:
        data = read_json(runs_root(root) / RUNNER_INFO, default={})
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def wait_until(pred, timeout: float, interval: float = 0.2) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(interval)
    return pred()


def request_eval(run_dir: str | os.PathLike, root: str | os.PathLike | None = None,
                 sets: dict[str, str] | None = None, protocol: str | None = None,
                 after: str | None = None) -> None:
    """Ask for the evaluation of a completed run (a marker file): the runner starts it when a
    slot is free. ``sets`` (name -> file) are evaluated besides the run's own eval.sets (a
    project's evaluation set added after the run: ``eval --set``); ``protocol``: under this
    evaluation protocol instead of the run's eval.protocol (``eval --protocol``: the
    project's protocol was changed); ``after``: on SLURM, the job id of a job that must end
    well first (this machine's queue runs its requests in order). ValueError saying why when
    it cannot be evaluated (:func:`eval_refusal`): a request that would only fail is never
    queued."""
    run_dir = Path(run_dir)
    why = eval_refusal(run_dir)
    if why:
        raise ValueError(f"cannot evaluate {run_dir.name}: {why}")
    fields = {"sets": {k: str(v) for k, v in (sets or {}).items()},
              **({"protocol": protocol} if protocol else {}),
              **({"after": str(after)} if after else {})}
    job_backend(run_dir).submit(kind("eval"), run_dir, fields)


def eval_requested(run_dir: str | os.PathLike) -> bool:
    return (Path(run_dir) / EVAL_REQUEST).exists()


# --- stress tests queued as jobs (docs/stress-tests.md#queued-as-a-job) ---------------------

def check_stress(attacks, settings: dict | None = None) -> list[str]:
    """The attacks (names, or "a,b" text; None: :func:`default_attacks`) checked against
    the registry, and ``settings`` (StressSettings fields) checked like the stress command's
    flags; ConfigError saying what is wrong."""
    from sga_core.params import from_dict
    from sga_core.stress.run import parse_attacks
    from sga_core.stress.settings import settings_class

    names = parse_attacks(default_attacks() if attacks is None else attacks)
    from_dict(settings_class(), settings or {}, "--")
    return names


def typed_settings(settings: dict | None) -> dict:
    """The given StressSettings fields as their declared types ("10, 50" -> [10, 50]: a
    form's text), checked like the stress command's flags (ConfigError)."""
    from sga_core.params import from_dict
    from sga_core.stress.settings import settings_class

    settings = dict(settings or {})
    typed = from_dict(settings_class(), settings, "--")
    return {k: getattr(typed, k) for k in settings}


def stress_refusal(run_dir: str | os.PathLike) -> str | None:
    """Why a stress test of this run cannot be queued now (None: it can): the run must
    have completed with a saved model, and no stress test of it be queued or running."""
    run_dir = Path(run_dir)
    run = RunFolder(run_dir)
    if not run.exists():
        return "not a run folder"
    state = run_status.effective_run(run_dir).get("state")
    if state != "completed":
        return f"it is {state or 'unknown'}: only a completed run can be stress-tested"
    if not run.has_model():
        return "it has no saved model"
    busy = stress_state(run_dir)
    if busy in ("queued", "running"):
        return f"a stress test of it is already {busy}"
    return None


def request_stress(run_dir: str | os.PathLike, attacks=None, settings: dict | None = None,
                   options: dict | None = None,
                   root: str | os.PathLike | None = None) -> dict:
    """Queue a stress test of a completed run with a saved model (the Runs page's
    Stress-test, ``stress RUN --queue``): the ``STRESS_REQUESTED`` marker (the attacks,
    their ``settings`` and the command's ``options``: original, max_new_tokens,
    batch_size, device), which the runner turns into ``python -m sga_core stress RUN_DIR``
    when a slot is free; for a run trained on SLURM, a job of its own
    (:func:`sga_core.runs.slurm.backend.submit_stress`). ValueError saying why when it
    cannot be queued (:func:`stress_refusal`). Returns what the stress test is shown as."""
    from sga_core.runs.launch import STRESS_OPTIONS

    run_dir = Path(run_dir)
    names = check_stress(attacks, settings)
    why = stress_refusal(run_dir)
    if why:
        raise ValueError(f"cannot stress-test {run_dir.name}: {why}")
    settings = typed_settings(settings)
    options = {k: v for k, v in (options or {}).items() if k in STRESS_OPTIONS and v is not None}
    shown = job_backend(run_dir).submit(kind("stress"), run_dir, {
        "attacks": names, "settings": settings, "options": options})
    return {**shown, "state": shown.get("state") or "queued", "attacks": names}


def stress_requested(run_dir: str | os.PathLike) -> bool:
    return RunFolder(run_dir).stress_requested()


def cancel_stress(run_dir: str | os.PathLike) -> dict:
    """Stop a run's stress test (:func:`cancel_job`): a running one records itself
    cancelled, and the result files it wrote stay whole."""
    return cancel_job("stress", run_dir)


def queue_stress_tests(run_dirs, attacks=None, settings: dict | None = None,
                       options: dict | None = None,
                       root: str | os.PathLike | None = None,
                       originals: dict[str, str] | None = None) -> dict:
    """Queue a stress test of each of ``run_dirs`` (a sweep, or any runs: the Results
    page's "Stress-test runs", ``stress RUN... --queue``); the attacks and settings are
    checked once (ConfigError). ``originals``: run id -> the model its recoveries are
    measured against, where that is not the model it was trained from (the Retained
    model: the project's Original). Returns ``{"queued": [run ids], "skipped": {run id:
    why}}``."""
    names = check_stress(attacks, settings)
    queued, skipped = [], {}
    for d in run_dirs:
        d = Path(d)
        own = (originals or {}).get(d.name)
        try:
            # the Retained model is measured against the Original, and is its own floor
            request_stress(d, names, settings, {**(options or {}), "original": own,
                                                "retained": str(RunFolder(d).model_dir)}
                           if own else options, root)
        except Exception as exc:  # noqa: BLE001 - one run's problem never stops the others
            msg = str(exc)
            skipped[d.name] = msg.split(": ", 1)[1] if msg.startswith(
                f"cannot stress-test {d.name}: ") else msg
        else:
            queued.append(d.name)
    return {"queued": queued, "skipped": skipped}


def stress_candidates(rows: list[dict], root: str | os.PathLike | None = None
                      ) -> tuple[list[str], dict[str, str]]:
    """Of ``rows`` (runs: ``run_id``, and ``path`` or a folder in ``root``), those a stress
    test can be queued for now (evaluated, with a model, none queued or running), and for
    the others why not (run id -> why). The Original's row is left out: it is the far end
    of every recovery, so attacking it measures nothing. The Retained model is offered:
    relearning it is the honest baseline, how fast the forget set is learned from scratch
    (its recoveries are measured against the Original: :func:`stress_originals`)."""
    ok, why = [], {}
    for r in rows:
        run_id = r.get("run_id")
        if not run_id or r.get("run") == "Original":
            continue
        path = Path(r.get("path") or runs_root(root) / run_id)
        reason = stress_refusal(path)
        if reason is None and not RunFolder(path).summary_path.exists():
            reason = "it is not evaluated yet"
        if reason is None:
            ok.append(run_id)
        else:
            why[run_id] = reason
    return ok, why


def stress_originals(rows: list[dict], root: str | os.PathLike | None = None
                     ) -> dict[str, str]:
    """For :func:`queue_stress_tests`: the Retained row's run id -> the Original row's
    model (the Retained model was trained from the base model, not from the Original its
    recoveries must be measured against); empty without both rows."""
    by = {r.get("run"): r for r in rows if r.get("run_id")}
    if "Original" not in by or "Retained" not in by:
        return {}
    original = by["Original"]
    path = Path(original.get("path") or runs_root(root) / original["run_id"])
    return {by["Retained"]["run_id"]: str(RunFolder(path).model_dir)}


__all__ = ["CANCEL_FILE", "awaiting_evaluation", "cancel", "cancel_eval", "cancel_job",
           "cancel_training", "delete", "job_backend",
           "ensure_runner", "eval_refusal", "eval_requested", "live_jobs", "prepared_role",
           "preview", "queued_runs", "replace_run", "request_eval", "rerun", "resume",
           "take_runner_lock",
           "runner_alive", "runner_info", "submit", "wait_reason", "wait_until",
           "cancel_stress", "check_stress", "default_attacks", "queue_stress_tests",
           "request_stress", "stress_candidates", "stress_originals", "stress_refusal",
           "stress_requested"]
