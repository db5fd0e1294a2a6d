"""Sending runs to SLURM, and cancelling them.

:func:`submit` makes the run folders (config.yaml, command.sh, data snapshot and slurm.sh),
checks the batch script with ``sbatch --test-only`` before the first folder is put in place,
and submits: one job for one run, one job array for a sweep or a seed group (throttled to
the profile's ``max_jobs``). A refusal by ``sbatch`` is a one-line :class:`SlurmError` and
leaves no run folder behind.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sga_core.fileio import atomic_write_bytes, atomic_write_text, now_iso
from sga_core.runs import status as run_status
from sga_core.runs.create import create_run
from sga_core.runs.folder import (
    SLURM_ARRAY_SCRIPT,
    SLURM_EVAL_SCRIPT,
    SLURM_LOG,
    SLURM_SCRIPT,
    RunFolder,
    request_cancel,
    runs_root,
)
from sga_core.runs.slurm import client
from sga_core.runs.slurm.profile import ClusterProfile, load_profile, profile_text, read_profile
from sga_core.runs.slurm.script import (
    array_script,
    check_path,
    eval_script,
    job_processes,
    run_script,
)
from sga_core.runs.slurm.states import UNSEEN_FIELDS, inferred

MODE = "slurm"
#: what sbatch says when no node has what the job asks for (CPUs, memory, GPUs, nodes)
NO_NODE = "node configuration is not available"


def preview(cfg, profile: ClusterProfile, root: str | os.PathLike | None = None) -> str:
    """The batch script a launch of ``cfg`` would submit (its run id as a preview)."""
    from sga_core.runs.create import make_run_id

    root = runs_root(root)
    return run_script(profile, root / (cfg.run_id or make_run_id(cfg, root)), cfg)


def workspace_preview(cfg, root: str | os.PathLike | None = None, workspace=None) -> str:
    """The batch script (slurm.sh) a SLURM launch of ``cfg`` would submit, from the
    workspace's cluster profile (the Train page's preview)."""
    return preview(cfg, load_profile(workspace), root)


def submit(cfgs: list, root: str | os.PathLike | None = None,
           profile: ClusterProfile | None = None, workspace=None,
           name: str | None = None, after: str | None = None) -> list[Path]:
    """Create the run folders of ``cfgs`` and submit them to SLURM; returns the folders.
    ``after``: a job id that one run's job waits for (it starts once that job ended well,
    and SLURM cancels it when that job fails)."""
    why = client.unavailable()
    if why:
        raise client.SlurmError(f"SLURM is not available: {why}")
    profile = profile or load_profile(workspace)
    check_path(runs_root(root), "runs folder")  # a path no batch script can hold: refused now
    made: list[Path] = []
    checked = []

    def add_script(tmp: Path, final: Path, cfg) -> None:
        atomic_write_text(tmp / SLURM_SCRIPT, run_script(profile, final, cfg))
        (tmp / SLURM_SCRIPT).chmod(0o755)
        atomic_write_text(RunFolder(tmp).slurm_profile_path, profile_text(profile))
        if not checked:  # partition, account, QoS, limits: before any folder exists
            sbatch(profile, str(tmp / SLURM_SCRIPT), test_only=True)
            checked.append(True)

    try:
        for cfg in cfgs:
            made.append(create_run(cfg, root, state="queued", mode=MODE,
                                   before_claim=add_script))
        submitted = now_iso()
        if len(made) == 1:
            ids = [sbatch(profile, str(made[0] / SLURM_SCRIPT), *after_ok(after))]
        else:
            group = name or cfgs[0].sweep or cfgs[0].group or made[0].name
            script = made[0] / SLURM_ARRAY_SCRIPT
            atomic_write_text(script, array_script(profile, made, group))
            array_id = sbatch(profile, str(script))
            ids = [f"{array_id}_{i}" for i in range(len(made))]
    except BaseException:
        for d in made:  # sbatch refused: no run folder is left for a job that never was
            shutil.rmtree(d, ignore_errors=True)
        raise
    for d, jid in zip(made, ids):
        run_status.write_run(d, backend=MODE, slurm_job_id=jid, slurm_submitted_at=submitted)
        note_submitted(d, jid, "training")
    submit_dependent_evals(made, cfgs, ids, profile)
    client.TABLE.forget()
    return made


def sbatch(profile: ClusterProfile, script: str, *options: str, test_only: bool = False) -> str:
    """:func:`client.sbatch`; a refusal because no node has what the profile asks for says
    which setting and what the nodes offer (:func:`explain_no_node`)."""
    try:
        return client.sbatch(script, *options, test_only=test_only)
    except client.SlurmError as exc:
        if NO_NODE not in str(exc):
            raise
        raise client.SlurmError(explain_no_node(str(exc), profile)) from None


def node_offers(partition: str = "") -> list[dict]:
    """The cluster's nodes (of ``partition``, when set) as SLURM has them: name, CPUs,
    memory in MB and GPUs each (``sinfo -N``); [] when sinfo cannot say."""
    args = ["-h", "-N", "-o", "%N|%c|%m|%G"] + (["-p", partition] if partition else [])
    try:
        text = client.call("sinfo", *args, timeout=20)
    except client.SlurmError:
        return []
    nodes: dict[str, dict] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4 or not parts[1].strip().isdigit():
            continue
        mem = parts[2].strip().rstrip("+")
        nodes[parts[0]] = {"node": parts[0], "cpus": int(parts[1]),
                           "mem_mb": int(mem) if mem.isdigit() else None,
                           "gpus": gpu_count(parts[3])}
    return list(nodes.values())


def gpu_count(gres: str) -> int:
    """The GPUs in a node's GRES text (``gpu:a100:4(S:0-1),tmp:1`` -> 4)."""
    total = 0
    for item in gres.split(","):
        item = item.split("(", 1)[0].strip()
        if item.startswith("gpu"):
            last = item.rsplit(":", 1)[-1]
            total += int(last) if last.isdigit() else 0
    return total


def mem_mb(text: str) -> int | None:
    """A SLURM memory size (``32G``, ``4000``, ``1T``) in MB; None when empty."""
    text = text.strip().upper()
    if not text:
        return None
    unit = text[-1] if text[-1] in "KMGT" else "M"
    number = int(text[:-1] if text[-1] in "KMGT" else text)
    return {"K": number // 1024, "M": number, "G": number * 1024,
            "T": number * 1024 * 1024}[unit]


def explain_no_node(raw: str, profile: ClusterProfile) -> str:
    """sbatch's "Requested node configuration is not available", said with the profile
    setting that no node meets and what the nodes offer."""
    where = f" in partition {profile.partition}" if profile.partition.strip() else ""
    nodes = node_offers(profile.partition.strip())
    if not nodes:
        return f"{raw} (no node{where} has what the cluster profile asks for)"
    most_cpus = max(n["cpus"] for n in nodes)
    most_gpus = max(n["gpus"] for n in nodes)
    mems = [n["mem_mb"] for n in nodes if n["mem_mb"] is not None]
    wants = []
    if profile.cpus > most_cpus:
        wants.append(f"cpus (CPUs per job, --cpus-per-task) is {profile.cpus}, but the "
                     f"largest node{where} has {most_cpus} CPUs; set it to {most_cpus} or "
                     "fewer (cluster set --cpus N, or the profile form)")
    if profile.gpus > most_gpus:
        wants.append(f"gpus (GPUs per job) is {profile.gpus}, but the nodes{where} have at "
                     f"most {most_gpus} GPUs")
    asked = mem_mb(profile.mem)
    if asked is not None and mems and asked > max(mems):
        wants.append(f"mem is {profile.mem}, but the largest node{where} has "
                     f"{max(mems)} MB")
    if profile.nodes > len(nodes):
        wants.append(f"nodes is {profile.nodes}, but the cluster has {len(nodes)} "
                     f"node{'s' if len(nodes) != 1 else ''}{where}")
    offer = (f"the nodes{where} offer at most {most_cpus} CPUs, "
             f"{max(mems) if mems else 'unknown'} MB of memory and {most_gpus} GPUs each "
             f"({len(nodes)} node{'s' if len(nodes) != 1 else ''})")
    if wants:
        return "no node can run this job: " + "; ".join(wants) + f" ({offer})"
    return f"{raw}: {offer}"


def note_submitted(run_dir: Path, job_id: str, what: str) -> None:
    """Start (or go on with) the run folder's ``slurm.log`` with the submission, so the log
    a SLURM state's message points to exists from the moment the job does, and says what
    happened when SLURM never ran the job (nothing after the line)."""
    try:
        with open(Path(run_dir) / SLURM_LOG, "a", encoding="utf-8") as log:
            log.write(f"[sga] {now_iso()}: {what} submitted to SLURM as job {job_id} (the "
                      "job's own lines follow once it starts)\n")
    except OSError:
        pass  # the log is a convenience; the submission stands


def submit_dependent_evals(made: list[Path], cfgs: list, ids: list[str],
                           profile: ClusterProfile) -> None:
    """Each run whose config asks for a separate evaluation (``eval.enabled`` and not
    ``eval.in_process``) gets its evaluation as a job of its own that SLURM holds until the
    training's job ends well (``--dependency=afterok``): it shows queued, "held by a
    dependency", meanwhile. Its eval status then exists, so the training's job does not
    evaluate in-job (:func:`sga_core.runs.launch.should_evaluate`)."""
    for run_dir, cfg, jid in zip(made, cfgs, ids):
        if cfg.eval.enabled and not cfg.eval.in_process:
            submit_eval(run_dir, profile=profile, after=jid)


def after_ok(job_id: str | None) -> tuple[str, ...]:
    """The sbatch options of a job held until ``job_id`` ends well (none without one)."""
    if not job_id:
        return ()
    return (f"--dependency=afterok:{client.job_id(job_id, 'the job waited for')}",
            "--kill-on-invalid-dep=yes")


def submit_chain(cfgs: list, root: str | os.PathLike | None = None,
                 profile: ClusterProfile | None = None, workspace=None) -> list[Path]:
    """Each of ``cfgs`` as a job of its own that starts once the one before ended well (a
    prepare: the retain reference, trained and evaluated, before the original, whose
    evaluation compares against it). Returns the run folders, in order."""
    profile = profile or load_profile(workspace)
    made: list[Path] = []
    for cfg in cfgs:
        jid = run_status.read_run(made[-1]).get("slurm_job_id") if made else None
        made += submit([cfg], root, profile=profile, after=jid)
    return made


def cancel(run_dir: str | os.PathLike) -> dict:
    """Cancel a SLURM run: the CANCEL file (a trainer that runs stops at its next step; a
    job that starts after this ends before training) and ``scancel``. A pending job is then
    cancelled at once and never starts."""
    run_dir = Path(run_dir)
    st = run_status.read_run(run_dir)
    if st.get("state") in run_status.FINAL_STATES and not inferred(st):
        return st  # (a failure the workbench only inferred may hide a job SLURM still has)
    request_cancel(run_dir)
    run_status.write_run(run_dir, cancel_requested_at=now_iso())  # for the states' reader
    jid = st.get("slurm_job_id")  # checked by the status reader: digits, or digits_digits
    if jid:
        client.scancel(client.job_id(jid, "status.json: slurm_job_id"))
    if st.get("state") in ("queued", "failed") and not st.get("slurm_started_at"):
        run_status.write_run(run_dir, "cancelled", ended_at=now_iso(),
                             error="cancelled before it started")
    cancel_dependent_eval(run_dir)
    client.TABLE.forget()
    return run_status.effective_run(run_dir)


def cancel_dependent_eval(run_dir: Path) -> None:
    """A cancelled run's evaluation job still held by its dependency is cancelled too (the
    training's job may yet end with 0: a job cancelled before it started does)."""
    ev = run_status.read_eval(run_dir)
    if ev.get("slurm_job_id") and ev.get("state") == "queued":
        cancel_eval(run_dir)


def submit_eval(run_dir: str | os.PathLike, sets: dict[str, str] | None = None,
                profile: ClusterProfile | None = None, workspace=None,
                after: str | None = None, protocol: str | None = None) -> dict:
    """Evaluate a trained SLURM run in a job of its own (the Results page's re-evaluation,
    ``eval`` asked for later): ``slurm-eval.sh`` in the run folder, submitted; the
    evaluation shows queued with the job's reason until the job starts it. ``after``: the
    training's job id; SLURM holds the evaluation until that job ends well, and cancels it
    when that job fails (``--dependency=afterok``, ``--kill-on-invalid-dep=yes``). Returns
    the evaluation's status."""
    from sga_core.runs.launch import eval_argv

    run_dir = Path(run_dir).resolve()
    profile = profile or load_profile(workspace)
    jid, submitted = _submit(run_dir / SLURM_EVAL_SCRIPT,
                             eval_script(profile, run_dir, eval_argv(run_dir, sets, protocol)),
                             *after_ok(after), profile=profile)
    return run_status.write_eval(run_dir, "queued", slurm_job_id=jid,
                                 slurm_submitted_at=submitted, error=None, stage=None,
                                 started_at=None, ended_at=None, slurm_state_final=None,
                                 slurm_reason=None, cancel_requested_at=None,
                                 **dict.fromkeys(UNSEEN_FIELDS))  # a new job: no misses yet


def _submit(script: Path, text: str, *sbatch_args: str,
            profile: ClusterProfile) -> tuple[str, str]:
    """Write a job's batch script and submit it: ``(job id, submitted at)``."""
    atomic_write_text(script, text)
    submitted = now_iso()
    jid = sbatch(profile, str(script), *sbatch_args)
    note_submitted(script.parent, jid, script.name)
    client.TABLE.forget()
    return jid, submitted


def cancel_job(run_dir: str | os.PathLike, kind) -> dict:
    """Cancel the SLURM job of a run's evaluation or stress test (``kind``: its
    :class:`~sga_core.runs.jobs.base.JobKind`): scancel; a pending one never starts and is
    recorded cancelled at once."""
    run_dir = Path(run_dir)
    st = kind.read_status(run_dir)
    if st.get("state") in run_status.FINAL_STATES and not inferred(st):
        return st
    jid = st.get("slurm_job_id")  # checked by the status reader: digits, or digits_digits
    if not jid:
        raise client.SlurmError(f"{run_dir.name}: no SLURM job to cancel "
                                f"({st.get('error') or 'its status names none'})")
    kind.write(run_dir, cancel_requested_at=now_iso())
    client.scancel(client.job_id(jid, "slurm_job_id"))
    client.TABLE.forget()
    if st.get("state") == "queued" or (inferred(st) and not st.get("slurm_started_at")):
        kind.write(run_dir, "cancelled", ended_at=now_iso(), error="cancelled before it started")
    return kind.effective(run_dir)


def cancel_eval(run_dir: str | os.PathLike) -> dict:
    """Cancel an evaluation sent to SLURM (scancel); a pending one never starts."""
    from sga_core.runs.jobs import kind

    return cancel_job(run_dir, kind("eval"))


def submit_stress(run_dir: str | os.PathLike, attacks: list[str], settings: dict | None = None,
                  options: dict | None = None, profile: ClusterProfile | None = None,
                  workspace=None) -> dict:
    """Stress-test a trained SLURM run in a job of its own (as :func:`submit_eval`):
    ``slurm-stress.sh`` in the run folder (the evaluation's script builder, running
    ``python -m sga_core stress RUN_DIR --attacks ...``), submitted; the stress test shows
    queued with the job's reason until the job starts it, then its own progress. Returns
    its status."""
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.launch import stress_argv

    run_dir = Path(run_dir).resolve()
    profile = profile or load_profile(workspace)
    jid, submitted = _submit(RunFolder(run_dir).slurm_stress_script_path,
                             eval_script(profile, run_dir,
                                         stress_argv(run_dir, attacks, settings, options),
                                         what="stress test", job="stress"), profile=profile)
    return run_status.write_stress(run_dir, "queued", slurm_job_id=jid,
                                   slurm_submitted_at=submitted, attacks=list(attacks),
                                   error=None, stage=None, done=0, total=None, stage_done=0,
                                   stage_total=None, results=[], pid=None, pid_start=None,
                                   started_at=None, ended_at=None, slurm_state_final=None,
                                   slurm_reason=None, cancel_requested_at=None,
                                   exit_code=None, **dict.fromkeys(UNSEEN_FIELDS))


def cancel_stress(run_dir: str | os.PathLike) -> dict:
    """Cancel a stress test sent to SLURM (scancel; as :func:`cancel_eval`): a pending one
    never starts; a running one gets SIGTERM from SLURM and records itself cancelled."""
    from sga_core.runs.jobs import kind

    return cancel_job(run_dir, kind("stress"))


def is_slurm_run(status: dict) -> bool:
    return bool(status.get("slurm_job_id")) or status.get("mode") == MODE


#: the fields of a run's SLURM job that a new job of it starts without: where and when the
#: old one ran, its restarts, SLURM's verdict on it, its misses, a cancel asked of it
OLD_JOB_FIELDS = ("slurm_node", "slurm_started_at", "slurm_wait_s", "slurm_restarts",
                  "slurm_state", "slurm_state_final", "slurm_reason", "cancel_requested_at",
                  *UNSEEN_FIELDS)


def run_profile(run_dir: str | os.PathLike, workspace=None) -> ClusterProfile:
    """The cluster profile a SLURM run's job was made from: its run folder's copy
    (slurm-profile.yaml, written at each submission), or for a run submitted before runs
    kept one, the workspace's profile as it is now. A damaged copy is a ConfigError."""
    recorded = RunFolder(run_dir).slurm_profile_path
    return read_profile(recorded) if recorded.exists() else load_profile(workspace)


def resume(run_dir: str | os.PathLike, profile: ClusterProfile | None = None,
           workspace=None) -> dict:
    """Resubmit a failed or cancelled SLURM run that has a checkpoint to SLURM, to continue
    from it in its own folder (:func:`sga_core.runs.queue.resume` sends a SLURM run here).
    The job asks for ``profile`` when given, else the run's own (:func:`run_profile`: the
    one it was submitted with). Returns the run's status: queued, with the new job's id.

    Everything is checked before anything is written: SLURM is offered here (a run sent to
    SLURM is never run on this machine instead), the profile reads, and every check of a
    local resume (:func:`sga_core.runs.launch.check_resumable`, with the job's process
    count). Then the run's slurm.sh is made again with the resume (``job start --resume``,
    the training with ``SGA_TRAIN_RESUME=1``: what a requeued job does), the run is queued
    without its old job's fields (:data:`OLD_JOB_FIELDS`) and the job submitted; slurm.log
    and slurm-profile.yaml say so once it is. Queued before sbatch, so the job never starts
    on a run that still says it ended; a refusal (:class:`~client.SlurmError`, sbatch's one
    line) puts status.json, slurm.sh and the CANCEL file back as they were. A run whose
    evaluation is a job of its own (``eval.in_process: false``) gets that job again, held
    until the new one ends well."""
    from sga_core.runs.checkpoints import latest
    from sga_core.runs.launch import check_resumable

    run_dir = Path(run_dir).resolve()
    why = client.unavailable()
    if why:
        raise client.SlurmError(f"cannot resume run {run_dir.name}: it runs on SLURM, which "
                                f"is not available here ({why}); resume it where sbatch is")
    profile = profile or run_profile(run_dir, workspace)
    check_path(run_dir)
    cfg = check_resumable(run_dir, lambda c: job_processes(profile, c))
    step = latest(run_dir)[0]
    text = run_script(profile, run_dir, cfg, resume=True)
    folder = RunFolder(run_dir)
    before = {p: (p.read_bytes(), p.stat().st_mode) if p.exists() else None
              for p in (folder.slurm_script_path, folder.cancel_path)}
    status_before = run_status.saved_run(run_dir)
    submitted = now_iso()
    try:
        run_status.write_run(run_dir, "queued", mode=MODE, backend=MODE, slurm_job_id=None,
                             slurm_submitted_at=submitted, ended_at=None, exit_code=None,
                             error=None, resume=None, **dict.fromkeys(OLD_JOB_FIELDS))
        folder.cancel_path.unlink(missing_ok=True)
        atomic_write_text(folder.slurm_script_path, text)
        folder.slurm_script_path.chmod(0o755)
        jid = sbatch(profile, str(folder.slurm_script_path))
    except BaseException:
        for path, kept in before.items():
            if kept is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write_bytes(path, kept[0])
                path.chmod(kept[1] & 0o7777)
        run_status.restore_run(run_dir, status_before)
        raise
    st = run_status.write_run(run_dir, slurm_job_id=jid)
    atomic_write_text(folder.slurm_profile_path, profile_text(profile))
    note_submitted(run_dir, jid, f"training (resumed from its checkpoint at step {step})")
    client.TABLE.forget()
    if cfg.eval.enabled and not cfg.eval.in_process:
        try:
            submit_eval(run_dir, profile=profile, after=jid)
        except client.SlurmError as exc:  # the training is submitted: said, not undone
            run_status.write_eval(run_dir, "failed", ended_at=now_iso(),
                                  error=f"the evaluation's job was not submitted with the "
                                        f"resume: {exc}")
    return st
