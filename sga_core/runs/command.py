"""The exact ``accelerate launch`` command of a run: shown by "Preview command", written to
``command.sh`` and executed by the launcher, so a run folder can be re-run by hand or on a
cluster."""

from __future__ import annotations

import shlex
from pathlib import Path

from sga_core.config import LaunchConfig, TrainConfig
from sga_core.fileio import atomic_write_text
from sga_core.model.device import describe
from sga_core.params import field_specs
from sga_core.runs.folder import RunFolder
from sga_core.text import printable


def launch_argv(cfg: TrainConfig, config_path: str) -> list[str]:
    """The ``accelerate launch ... -m sga_core.train --config CONFIG`` argument list.

    The device is not fixed here unless it is forced (``device: cpu``): with ``auto`` the
    trainer picks the GPU or the CPU, and the mixed precision, on the machine that runs the
    command (:mod:`sga_core.model.device`), so the same command.sh serves a cluster node."""
    la = cfg.launch
    argv = ["accelerate", "launch"]
    if la.config_file:
        argv += ["--config_file", la.config_file]
    else:
        argv += ["--num_machines", "1", "--num_processes", str(la.num_processes)]
        if la.mixed_precision != "auto":
            argv += ["--mixed_precision", la.mixed_precision]
        argv += ["--dynamo_backend", "no"]
        if la.num_processes > 1:
            # torchrun-style launch; on the CPU the trainer's Accelerator(cpu=True) uses DDP
            # over gloo (accelerate's own --cpu flag starts one process unless MPI is set up)
            argv.append("--multi_gpu")
            if la.main_process_port:
                argv += ["--main_process_port", str(la.main_process_port)]
        elif la.device == "cpu":
            argv.append("--cpu")
    argv += ["-m", "sga_core.train", "--config", config_path]
    return argv


DIRECT_ENV = "SGA_TRAIN_DIRECT"


def start_argv(cfg: TrainConfig, config_path: str) -> tuple[list[str], dict]:
    """What the workbench itself starts: ``(argv, extra environment)``.

    A one-process run without an accelerate config file starts the trainer directly
    (``python -m sga_core.train --config CONFIG``): accelerate's launcher would only set a
    few environment variables and start that same process, after importing torch itself
    (seconds of every run's fixed cost). The trainer resolves the device and precision
    either way, so this and command.sh's ``accelerate launch`` line train alike."""
    la = cfg.launch
    if la.num_processes == 1 and not la.config_file:
        return ["python", "-m", "sga_core.train", "--config", config_path], {DIRECT_ENV: "1"}
    return launch_argv(cfg, config_path), {}


def command_text(cfg: TrainConfig, run_dir: Path) -> str:
    return shlex.join(launch_argv(cfg, str(RunFolder(Path(run_dir).resolve()).config_path)))


def write_command_sh(cfg: TrainConfig, run_dir: Path, into: Path | None = None) -> Path:
    """Write command.sh for the run at ``run_dir`` (into folder ``into``, default run_dir)."""
    la = cfg.launch
    text = (
        "#!/usr/bin/env bash\n"
        "# Re-run this training exactly: from the project root, with the same environment.\n"
        "# On a GPU cluster: edit config.yaml's launch section or pass an accelerate config.\n"
        f"# device: {printable(describe(la.device, la.mixed_precision, la.config_file))}\n"
        "set -euo pipefail\n"
        f"{command_text(cfg, run_dir)}\n"
    )
    path = RunFolder(into or run_dir).command_path
    atomic_write_text(path, text)
    path.chmod(0o755)
    return path


def device_note(launch: dict) -> str:
    """Where a run with these launch settings trains, in words, with what this machine has
    (found without torch): the Train page's device line."""
    from sga_core.model.device import gpu_hint

    la = {**{s["name"]: s["default"] for s in field_specs(LaunchConfig)}, **(launch or {})}
    if la.get("cpu"):
        la["device"] = "cpu"
    return "Device: " + describe(la["device"], la["mixed_precision"], la.get("config_file"),
                                 gpu=gpu_hint())


# What a multi-node SLURM job's accelerate launch reads from SLURM's environment: each node's
# copy of the line expands them on that node (its own $SLURM_NODEID), see cluster_launch_argv.
MAIN_HOST_VAR = "SGA_MAIN_HOST"
MAIN_PORT_VAR = "SGA_MAIN_PORT"


class ShellWord(str):
    """A word of shell text that this code wrote itself (a variable's expansion such as
    ``"$SLURM_NODEID"``): a script takes it as it is. Every other word is quoted, whatever
    its characters: a value from a config or a path is never a ShellWord (it is made here
    only), so the exemption goes by identity, not by how a word starts."""

    __slots__ = ()


def shell_words(argv: list[str]) -> str:
    """``argv`` as one shell line: each :class:`ShellWord` as it is, every other word
    quoted (:func:`shlex.quote`)."""
    return " ".join(a if type(a) is ShellWord else shlex.quote(str(a)) for a in argv)


def expand(var: str) -> ShellWord:
    """The shell word that expands variable ``var`` (a name this code chose)."""
    if not var.isidentifier() or not var.isascii():
        raise ValueError(f"not a shell variable name: {var!r}")
    return ShellWord(f'"${var}"')


def cluster_launch_argv(cfg: TrainConfig, config_path: str, processes_per_node: int,
                        nodes: int) -> list[str]:
    """The ``accelerate launch`` argument list of a SLURM job over ``nodes`` nodes with
    ``processes_per_node`` processes each (the profile's GPUs per node): ``--num_processes``
    counts every process of the job. With more than one node the machine count, this node's
    rank and the rendezvous host and port are :class:`ShellWord` s (``"$SLURM_NNODES"``,
    ``"$SLURM_NODEID"``, ...) for the shell on each node to expand; the job script sets the
    host and port (docs/slurm.md#multi-node-runs). The accelerate config file (DDP, FSDP,
    DeepSpeed) keeps the rest; these flags override its machine and process counts."""
    la = cfg.launch
    argv = ["accelerate", "launch"]
    if la.config_file:
        argv += ["--config_file", str(la.config_file)]
    total = max(1, processes_per_node) * max(1, nodes)
    if nodes > 1:
        argv += ["--num_machines", expand("SLURM_NNODES"), "--machine_rank",
                 expand("SLURM_NODEID"), "--main_process_ip", expand(MAIN_HOST_VAR),
                 "--main_process_port", expand(MAIN_PORT_VAR)]
    else:
        argv += ["--num_machines", "1"]
    argv += ["--num_processes", str(total)]
    if not la.config_file:
        if la.mixed_precision != "auto":
            argv += ["--mixed_precision", la.mixed_precision]
        argv += ["--dynamo_backend", "no"]
        if total > 1:
            argv.append("--multi_gpu")
    argv += ["-m", "sga_core.train", "--config", str(config_path)]
    return argv


def cluster_launch_text(cfg: TrainConfig, config_path: str, processes_per_node: int,
                        nodes: int) -> str:
    """:func:`cluster_launch_argv` as one shell line (:func:`shell_words`): every value
    quoted, only the launch's own ``"$SLURM_..."`` words left for the node's shell."""
    return shell_words(cluster_launch_argv(cfg, config_path, processes_per_node, nodes))
