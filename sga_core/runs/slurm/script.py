"""The batch scripts: ``slurm.sh`` in each run folder (beside command.sh; ``sbatch slurm.sh``
resubmits the run by hand) and, for a sweep or seed group, ``slurm-array.sh`` (a job array
whose task N runs the Nth run folder's slurm.sh, at most the profile's ``max_jobs`` at once).

The job runs the run folder's own ``command.sh``: the run folder stays the contract, and the
pages read what the job writes into it as they read a local run.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from sga_core.assets import PROJECT_ROOT
from sga_core.runs.checkpoints import RESUME_ENV
from sga_core.runs.folder import SLURM_LOG, SLURM_SCRIPT
from sga_core.runs.slurm.profile import ClusterProfile

JOB_NAME_MAX = 64


def sbatch_lines(profile: ClusterProfile, job_name: str, output: str) -> list[str]:
    """The ``#SBATCH`` lines the profile asks for, in a fixed order."""
    p = profile
    opts = [f"--job-name={job_name[:JOB_NAME_MAX]}", f"--output={output}",
            "--open-mode=append"]
    for key, flag in (("partition", "partition"), ("account", "account"), ("qos", "qos")):
        if getattr(p, key).strip():
            opts.append(f"--{flag}={getattr(p, key).strip()}")
    if p.time_limit.strip():
        opts.append(f"--time={p.time_limit.strip()}")
    opts += [f"--nodes={p.nodes}", "--ntasks-per-node=1", f"--cpus-per-task={p.cpus}"]
    if p.gpus:
        opts.append(f"--gres=gpu:{p.gres_type.strip() + ':' if p.gres_type.strip() else ''}"
                    f"{p.gpus}")
    if p.mem.strip():
        opts.append(f"--mem={p.mem.strip()}")
    if p.signal_seconds:
        opts.append(f"--signal=B:USR1@{p.signal_seconds}")
    opts.append("--requeue" if p.requeue or p.resume_after_stop else "--no-requeue")
    opts += [line.strip() for line in p.extra_sbatch if line.strip()]
    return [f"#SBATCH {o}" for o in opts]


def environment_lines(profile: ClusterProfile) -> list[str]:
    """Setup lines, then the workbench's own environment when asked for (its Python first
    on PATH, its code on PYTHONPATH) and the project root as the working folder."""
    lines = [line.rstrip() for line in profile.setup if line.strip()]
    if profile.use_workbench_python:
        lines.append(f"export PATH={shlex.quote(str(Path(sys.executable).parent))}:\"$PATH\"")
    lines.append(f"export PYTHONPATH={shlex.quote(str(PROJECT_ROOT))}"
                 "${PYTHONPATH:+:$PYTHONPATH}")
    lines.append(f"cd {shlex.quote(str(PROJECT_ROOT))}")
    return lines


def run_script(profile: ClusterProfile, run_dir: Path, cfg=None) -> str:
    """``slurm.sh`` of the run at ``run_dir`` (its final path); ``cfg`` (the run's
    TrainConfig, default: the defaults) gives a multi-node launch its accelerate config."""
    run_dir = Path(run_dir)
    q = shlex.quote(str(run_dir))
    setup, train = launch_lines(profile, run_dir, cfg)
    # with resume_after_stop every start continues from the newest checkpoint (the first,
    # with none yet, starts from step 0), and a run stopped at a checkpoint may start again
    resume = " --resume" if profile.resume_after_stop else ""
    env = f"export {RESUME_ENV}=1; " if profile.resume_after_stop else ""
    body = [
        "#!/usr/bin/env bash",
        f"# The SLURM job of run {run_dir.name}, from the workspace's cluster profile.",
        f"# Resubmit it by hand: sbatch {q}/{SLURM_SCRIPT}",
        *sbatch_lines(profile, f"sga-{run_dir.name}", f"{run_dir}/{SLURM_LOG}"),
        "",
        *environment_lines(profile),
        f"RUN_DIR={q}",
        "# records the node and the wait; a run cancelled before it started ends here",
        f'python -m sga_core.runs.slurm.job start{resume} "$RUN_DIR" || exit 0',
        *setup,
    ]
    if profile.signal_seconds or profile.resume_after_stop:
        body += [
            "# SLURM's USR1 (before the time limit) goes to the training, which saves a",
            "# checkpoint and stops: the training's other processes ignore USR1, and it is",
            "# passed on every 10 s until the training is gone (one that came before the",
            "# trainer listened is not lost)",
            f"({env}trap '' USR1; exec {train}) &",
            "child=$!",
            "forward() {",
            "  trap '' USR1",
            '  (while kill -0 "$child" 2>/dev/null; do kill -USR1 0; sleep 10; done) &',
            "  forwarder=$!",
            "}",
            "forwarder=",
            "trap forward USR1",
            'code=0; wait "$child" || code=$?',
            'while kill -0 "$child" 2>/dev/null; do code=0; wait "$child" || code=$?; done',
            '[ -z "$forwarder" ] || kill "$forwarder" 2>/dev/null',
        ]
    else:
        body += [f"code=0; {train} || code=$?"]
    if profile.resume_after_stop:
        body += [
            "# stopped at a checkpoint (not cancelled): requeue; the next start resumes",
            'if [ "$code" -ne 0 ] && python -m sga_core.runs.slurm.job stopped "$RUN_DIR"; then',
            '  scontrol requeue "$SLURM_JOB_ID" && exit 0',
            "fi",
        ]
    body += [
        "# the evaluation, in this job, when the run asks for one and did not evaluate itself",
        'if [ "$code" -eq 0 ]; then python -m sga_core.runs.slurm.job evaluate "$RUN_DIR" '
        '|| code=$?; fi',
        'exit "$code"',
        "",
    ]
    return "\n".join(body)


def launch_lines(profile: ClusterProfile, run_dir: Path, cfg=None) -> tuple[list[str], str]:
    """``(setup lines, the training command)`` of a job: the run folder's command.sh, or,
    when the profile's nodes or GPUs set another process count than the run's launch,
    ``accelerate launch`` with ``--num_processes`` = GPUs per node x nodes. Over several
    nodes ``srun`` starts it once per node; each node's shell fills in its own
    ``$SLURM_NODEID`` as the machine rank, and the first host of the allocation
    (``scontrol show hostnames``) with the run's port (or one from the job id) is the
    rendezvous (docs/slurm.md#multi-node-runs)."""
    from sga_core.config import TrainConfig
    from sga_core.runs.command import MAIN_HOST_VAR, MAIN_PORT_VAR, cluster_launch_text
    from sga_core.runs.folder import RunFolder

    cfg = cfg or TrainConfig()
    per_node = profile.gpus or cfg.launch.num_processes
    if profile.nodes <= 1 and per_node == cfg.launch.num_processes:
        return [], 'bash "$RUN_DIR/command.sh"'
    line = cluster_launch_text(cfg, str(RunFolder(run_dir).config_path), per_node,
                               profile.nodes)
    if profile.nodes <= 1:
        return [f"# {per_node} GPUs: one process each"], line
    port = cfg.launch.main_process_port or "$((29500 + SLURM_JOB_ID % 10000))"
    return [
        f"# {profile.nodes} nodes x {per_node} processes: accelerate launch once per node "
        "(srun);",
        "# the first host of the allocation is the rendezvous, each node's rank its "
        "$SLURM_NODEID",
        f'export {MAIN_HOST_VAR}="$(scontrol show hostnames "$SLURM_JOB_NODELIST" '
        '| head -n 1)"',
        f"export {MAIN_PORT_VAR}={port}",
    ], ('srun --nodes="$SLURM_NNODES" --ntasks-per-node=1 --kill-on-bad-exit=1 '
        f"bash -c {shlex.quote(line)}")


def eval_script(profile: ClusterProfile, run_dir: Path, argv: list[str],
                what: str = "evaluation", job: str = "eval") -> str:
    """``slurm-eval.sh``: the evaluation of a trained run (``argv``: its ``python -m
    sga_core eval RUN_DIR`` command) as a job of its own; with ``what`` "stress test" and
    ``job`` "stress", ``slurm-stress.sh``: its stress test (``python -m sga_core stress
    RUN_DIR``), the job named ``sga-<job>-<run id>``."""
    run_dir = Path(run_dir)
    return "\n".join([
        "#!/usr/bin/env bash",
        f"# The {what} of run {run_dir.name} as a SLURM job (asked for after training).",
        *sbatch_lines(profile, f"sga-{job}-{run_dir.name}", f"{run_dir}/{SLURM_LOG}"),
        "",
        *environment_lines(profile),
        shlex.join(argv),
        "",
    ])


def array_script(profile: ClusterProfile, run_dirs: list[Path], name: str) -> str:
    """``slurm-array.sh``: a job array over ``run_dirs``, ``max_jobs`` at once; each task
    runs its run folder's slurm.sh (its output into that folder's slurm.log)."""
    runs = " ".join(shlex.quote(str(d)) for d in run_dirs)
    lines = sbatch_lines(profile, f"sga-{name}", "/dev/null")
    throttle = min(profile.max_jobs, len(run_dirs))
    return "\n".join([
        "#!/usr/bin/env bash",
        f"# The job array of {len(run_dirs)} runs ({name}); task N runs the Nth run folder's",
        f"# {SLURM_SCRIPT}, at most {throttle} at once; each writes its own {SLURM_LOG}.",
        *lines,
        f"#SBATCH --array=0-{len(run_dirs) - 1}%{throttle}",
        "",
        f"RUNS=({runs})",
        'RUN_DIR="${RUNS[$SLURM_ARRAY_TASK_ID]}"',
        f'exec bash "$RUN_DIR/{SLURM_SCRIPT}" >>"$RUN_DIR/{SLURM_LOG}" 2>&1',
        "",
    ])
