"""The batch scripts: ``slurm.sh`` in each run folder (beside command.sh; ``sbatch slurm.sh``
resubmits the run by hand) and, for a sweep or seed group, ``slurm-array.sh`` (a job array
whose task N runs the Nth run folder's slurm.sh, at most the profile's ``max_jobs`` at once).

The job runs the run folder's own ``command.sh``: the run folder stays the contract, and the
pages read what the job writes into it as they read a local run.

Every value that goes into a script (a path, a name, a config's setting) is quoted or
refused: shell words with :func:`shlex.quote` (only the code's own
:class:`~sga_core.runs.command.ShellWord` s are left as they are), ``#SBATCH`` values with
sbatch's own double quotes (:func:`sbatch_word`), comments with their control characters
escaped (:func:`comment`). A run folder whose path holds a line break, another control
character or a backslash is refused (:func:`check_path`): no ``#SBATCH`` line can hold the
first two, and sbatch drops backslashes from an output path. A ``%`` in the path is written
``%%`` in ``--output`` (sbatch's pattern for a literal ``%``).
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

from sga_core.assets import PROJECT_ROOT
from sga_core.params import ConfigError
from sga_core.runs.checkpoints import RESUME_ENV
from sga_core.runs.command import ShellWord, shell_words
from sga_core.runs.folder import SLURM_LOG, SLURM_SCRIPT
from sga_core.runs.slurm.job import NOT_STARTED
from sga_core.runs.slurm.profile import ClusterProfile
from sga_core.text import printable

JOB_NAME_MAX = 64
#: the characters an #SBATCH value may have unquoted (anything else is double-quoted)
SBATCH_BARE = re.compile(r"[A-Za-z0-9_./:=,+@%-]+")


def check_path(path: str | os.PathLike, what: str = "run folder") -> str:
    """``path`` as text when a batch script can hold it (spaces, quotes, ``$``, ``;`` and
    ``%`` can); ConfigError naming it when it has a line break, another control character
    or a backslash."""
    text = str(path)
    if not text.isprintable() or "\\" in text:
        raise ConfigError(f"{what} {printable(text)[:200]}: a path with a line break, a "
                          "control character or a backslash cannot go into a SLURM batch "
                          "script; choose a runs folder (--runs-dir, SGA_RUNS_DIR) without "
                          "them")
    return text


def sbatch_word(value, what: str) -> str:
    """``value`` as an ``#SBATCH`` option's value: as it is when it has only
    :data:`SBATCH_BARE` characters, else in double quotes with ``\\`` and ``"`` escaped
    (sbatch reads it so, and so does :func:`shlex.split`). A line break or another control
    character cannot be written there: ConfigError naming ``what``."""
    text = str(value)
    if not text.isprintable():
        raise ConfigError(f"{what}: {printable(text)[:80]!r} has a line break or a control "
                          "character, which an #SBATCH line cannot hold")
    if SBATCH_BARE.fullmatch(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def output_pattern(path: str | os.PathLike) -> str:
    """``--output``'s value for the file ``path``: each ``%`` doubled (sbatch reads
    ``%j``, ``%A``, ... as patterns and ``%%`` as a literal ``%``)."""
    return check_path(path).replace("%", "%%")


def comment(text: str) -> str:
    """A comment line of a script: ``text`` with every line break and control character
    written as an escape, so no value can end the comment and start a command."""
    return f"# {printable(str(text))}"


def sbatch_lines(profile: ClusterProfile, job_name: str, output: str) -> list[str]:
    """The ``#SBATCH`` lines the profile asks for, in a fixed order; ``output`` the file the
    job writes to (a path; :func:`output_pattern`)."""
    p = profile
    opts = [("--job-name", sbatch_word(job_name[:JOB_NAME_MAX], "job name")),
            ("--output", sbatch_word(output_pattern(output), "output")),
            ("--open-mode", "append")]
    for key in ("partition", "account", "qos"):
        if getattr(p, key).strip():
            opts.append((f"--{key}", sbatch_word(getattr(p, key).strip(), key)))
    if p.time_limit.strip():
        opts.append(("--time", sbatch_word(p.time_limit.strip(), "time_limit")))
    opts += [("--nodes", str(int(p.nodes))), ("--ntasks-per-node", "1"),
             ("--cpus-per-task", str(int(p.cpus)))]
    if p.gpus:
        gres = f"gpu:{p.gres_type.strip() + ':' if p.gres_type.strip() else ''}{int(p.gpus)}"
        opts.append(("--gres", sbatch_word(gres, "gres_type")))
    if p.mem.strip():
        opts.append(("--mem", sbatch_word(p.mem.strip(), "mem")))
    if p.signal_seconds:
        opts.append(("--signal", f"B:USR1@{int(p.signal_seconds)}"))
    lines = [f"#SBATCH {flag}={value}" for flag, value in opts]
    lines.append("#SBATCH --requeue" if p.requeue or p.resume_after_stop else
                 "#SBATCH --no-requeue")
    for line in p.extra_sbatch:  # the person's own sbatch options, each as given
        if line.strip():
            sbatch_word(line.strip(), "extra_sbatch")  # no line break, no control character
            lines.append(f"#SBATCH {line.strip()}")
    return lines


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


def run_script(profile: ClusterProfile, run_dir: Path, cfg=None, resume: bool = False) -> str:
    """``slurm.sh`` of the run at ``run_dir`` (its final path); ``cfg`` (the run's
    TrainConfig, default: the defaults) gives a multi-node launch its accelerate config.
    ``resume``: the job of a run resumed by request
    (:func:`sga_core.runs.slurm.backend.resume`): the training continues from the newest
    checkpoint, as every start does with the profile's ``resume_after_stop``."""
    run_dir = Path(run_dir)
    q = shlex.quote(check_path(run_dir))
    setup, train = launch_lines(profile, run_dir, cfg)
    # with resume_after_stop every start continues from the newest checkpoint (the first,
    # with none yet, starts from step 0), and a run stopped at a checkpoint may start again
    resumes = resume or profile.resume_after_stop
    flag = " --resume" if resumes else ""
    env = f"export {RESUME_ENV}=1; " if resumes else ""
    what = ("resumed by request: the training continues from its newest checkpoint" if resume
            else "from the workspace's cluster profile")
    body = [
        "#!/usr/bin/env bash",
        comment(f"The SLURM job of run {run_dir.name}, {what}."),
        comment(f"Resubmit it by hand: sbatch {shlex.quote(str(run_dir / SLURM_SCRIPT))}"),
        *sbatch_lines(profile, f"sga-{run_dir.name}", run_dir / SLURM_LOG),
        "",
        *environment_lines(profile),
        f"RUN_DIR={q}",
        "# records the node and the wait; a run cancelled before it started ends here (the",
        f"# job ends well: exit {NOT_STARTED} -> 0); any other failure of the start fails the "
        "job",
        f'code=0; python -m sga_core.runs.slurm.job start{flag} "$RUN_DIR" || code=$?',
        f'if [ "$code" -eq {NOT_STARTED} ]; then exit 0; elif [ "$code" -ne 0 ]; then '
        'exit "$code"; fi',
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
        body += [f"code=0; {env}{train} || code=$?"]
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


def cluster_launch(profile: ClusterProfile, cfg) -> bool:
    """Whether the job launches the training itself (:func:`launch_lines`): the profile's
    nodes or GPUs give another process count than the run's own launch (command.sh)."""
    return profile.nodes > 1 or (profile.gpus or cfg.launch.num_processes) != \
        cfg.launch.num_processes


def job_processes(profile: ClusterProfile, cfg) -> int | None:
    """How many training processes the job of ``cfg`` has under ``profile``: GPUs per node
    x nodes when it launches them itself (:func:`cluster_launch`), else the run's own
    launch's (None where its accelerate config file says)."""
    if cluster_launch(profile, cfg):
        return int(profile.gpus or cfg.launch.num_processes) * int(profile.nodes)
    return None if cfg.launch.config_file else cfg.launch.num_processes


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
    if not cluster_launch(profile, cfg):
        return [], 'bash "$RUN_DIR/command.sh"'
    line = cluster_launch_text(cfg, check_path(RunFolder(run_dir).config_path), per_node,
                               profile.nodes)
    if profile.nodes <= 1:
        return [comment(f"{int(per_node)} GPUs: one process each")], line
    port = (str(int(cfg.launch.main_process_port)) if cfg.launch.main_process_port else
            ShellWord("$((29500 + SLURM_JOB_ID % 10000))"))
    return [
        comment(f"{int(profile.nodes)} nodes x {int(per_node)} processes: accelerate launch "
                "once per node (srun);"),
        "# the first host of the allocation is the rendezvous, each node's rank its "
        "$SLURM_NODEID",
        f'export {MAIN_HOST_VAR}="$(scontrol show hostnames "$SLURM_JOB_NODELIST" '
        '| head -n 1)"',
        f"export {MAIN_PORT_VAR}={shell_words([port])}",
    ], ('srun --nodes="$SLURM_NNODES" --ntasks-per-node=1 --kill-on-bad-exit=1 '
        f"bash -c {shlex.quote(line)}")


def eval_script(profile: ClusterProfile, run_dir: Path, argv: list[str],
                what: str = "evaluation", job: str = "eval") -> str:
    """``slurm-eval.sh``: the evaluation of a trained run (``argv``: its ``python -m
    sga_core eval RUN_DIR`` command) as a job of its own; with ``what`` "stress test" and
    ``job`` "stress", ``slurm-stress.sh``: its stress test (``python -m sga_core stress
    RUN_DIR``), the job named ``sga-<job>-<run id>``."""
    run_dir = Path(check_path(run_dir))
    return "\n".join([
        "#!/usr/bin/env bash",
        comment(f"The {what} of run {run_dir.name} as a SLURM job (asked for after "
                "training)."),
        *sbatch_lines(profile, f"sga-{job}-{run_dir.name}", run_dir / SLURM_LOG),
        "",
        *environment_lines(profile),
        shell_words([str(a) for a in argv]),
        "",
    ])


def array_script(profile: ClusterProfile, run_dirs: list[Path], name: str) -> str:
    """``slurm-array.sh``: a job array over ``run_dirs``, ``max_jobs`` at once; each task
    runs its run folder's slurm.sh (its output into that folder's slurm.log)."""
    runs = " ".join(shlex.quote(check_path(d)) for d in run_dirs)
    lines = sbatch_lines(profile, f"sga-{name}", "/dev/null")
    throttle = min(profile.max_jobs, len(run_dirs))
    return "\n".join([
        "#!/usr/bin/env bash",
        comment(f"The job array of {len(run_dirs)} runs ({name}); task N runs the Nth run "
                "folder's"),
        f"# {SLURM_SCRIPT}, at most {throttle} at once; each writes its own {SLURM_LOG}.",
        *lines,
        f"#SBATCH --array=0-{len(run_dirs) - 1}%{throttle}",
        "",
        f"RUNS=({runs})",
        'RUN_DIR="${RUNS[$SLURM_ARRAY_TASK_ID]}"',
        f'exec bash "$RUN_DIR/{SLURM_SCRIPT}" >>"$RUN_DIR/{SLURM_LOG}" 2>&1',
        "",
    ])
