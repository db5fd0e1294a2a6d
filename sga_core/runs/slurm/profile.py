"""The cluster profile: what every batch job of a workspace asks SLURM for, and how its runs
are sent by default. One typed ``param()`` dataclass drives the CLI flags (``--slurm-*``), the
profile form and the YAML file ``workspace/cluster.yaml`` (docs/slurm.md)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sga_core.fileio import atomic_write_text, load_yaml
from sga_core.params import ConfigError, from_dict, param, to_dict

#: the profile's file in the workspace folder (beside the projects)
PROFILE_FILE = "cluster.yaml"
BACKENDS = ("local", "slurm")
TIME_RE = re.compile(r"^(\d+-)?\d+(:\d{1,2}){0,2}$|^$")
MEM_RE = re.compile(r"^$|^\d+[KMGT]?$", re.IGNORECASE)
NAME_RE = re.compile(r"^[A-Za-z0-9_.,:=+-]*$")


@dataclass
class ClusterProfile:
    backend: str = param("local", "Where runs go by default: 'local' (the queue on this "
                                  "machine) or 'slurm' (sbatch).", choices=BACKENDS,
                         label="default backend")
    partition: str = param("", "SLURM partition (--partition); empty = the cluster's default.")
    account: str = param("", "SLURM account to charge (--account); empty = your default.")
    qos: str = param("", "Quality of service (--qos); empty = the default.", label="QoS")
    time_limit: str = param("4:00:00", "Wall-time limit per job (--time): minutes, H:MM:SS or "
                                       "D-HH:MM:SS; SLURM stops the job after it.",
                            label="time limit")
    gpus: int = param(0, "GPUs per job (--gres=gpu:N); with nodes, per node.", min=0, max=64,
                      label="GPUs per job")
    gres_type: str = param("", "GPU type in --gres (gpu:a100:N); empty = any.",
                           advanced=True, label="GPU type")
    cpus: int = param(4, "CPUs per job (--cpus-per-task).", min=1, max=1024,
                      label="CPUs per job")
    mem: str = param("", "Memory per node (--mem), e.g. 32G; empty = the cluster's default.",
                     label="memory")
    nodes: int = param(1, "Nodes per job (--nodes).", min=1, max=64)
    max_jobs: int = param(4, "How many jobs of one sweep or seed group may run at once (the "
                             "job array's %N throttle).", min=1, max=10_000,
                          label="jobs at once")
    extra_sbatch: list[str] = param([], "Extra #SBATCH lines, each as given (e.g. "
                                        "--constraint=a100).", label="extra #SBATCH lines",
                                  hidden=True)  # forms: a text area, one line each
    setup: list[str] = param([], "Shell lines run before the command (module load ..., "
                                 "source venv/bin/activate).", label="setup lines",
                             hidden=True)
    use_workbench_python: bool = param(True, "Put this workbench's Python environment first "
                                             "on PATH in the job (it must be on the shared "
                                             "filesystem); off when the setup lines activate "
                                             "one.", advanced=True)
    signal_seconds: int = param(0, "Seconds before the time limit SLURM sends SIGUSR1 to the "
                                   "job's batch shell (--signal=B:USR1@N), for a checkpoint; "
                                   "0 = none.", min=0, max=86_400, advanced=True)
    requeue: bool = param(False, "Let SLURM requeue the job after a preemption or node "
                                 "failure (--requeue).", advanced=True)
    resume_after_stop: bool = param(False, "When SLURM's signal (signal_seconds before the "
                                           "time limit) or a preemption stops the training "
                                           "at a checkpoint, requeue the job (scontrol "
                                           "requeue) and continue the run from that "
                                           "checkpoint when it starts again (implies "
                                           "--requeue).", advanced=True,
                                    label="requeue and resume after a stop")

    def settings_problem(self) -> str | None:
        for key in ("partition", "account", "qos", "gres_type"):
            if not NAME_RE.match(getattr(self, key)):
                return f"{key}: {getattr(self, key)!r} has characters SLURM names never have"
        if not TIME_RE.match(self.time_limit.strip()):
            return (f"time_limit: {self.time_limit!r} is not a SLURM time (minutes, H:MM:SS or "
                    "D-HH:MM:SS)")
        if not MEM_RE.match(self.mem.strip()):
            return f"mem: {self.mem!r} is not a SLURM memory size (e.g. 32G, 4000M)"
        for line in [*self.extra_sbatch, *self.setup]:
            if "\n" in line or "\r" in line:
                return "extra_sbatch/setup: one line per entry"
        for line in self.extra_sbatch:
            if not line.strip().startswith("-"):
                return (f"extra_sbatch: {line[:40]!r} is not an sbatch option (it starts "
                        "with -)")
        return None


def profile_path(workspace: str | os.PathLike | None = None) -> Path:
    from sga_core.projects import workspace_root

    return workspace_root(workspace) / PROFILE_FILE


def load_profile(workspace: str | os.PathLike | None = None) -> ClusterProfile:
    """The workspace's profile (the defaults when it has none); a damaged file is a
    ConfigError naming it and the bad key."""
    path = profile_path(workspace)
    if not path.exists():
        return ClusterProfile()
    try:
        data = load_yaml(path.read_bytes(), PROFILE_FILE)
    except Exception as exc:
        raise ConfigError(f"{path}: not readable YAML ({str(exc).splitlines()[0]})") from None
    if data is None:
        return ClusterProfile()
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a mapping of profile settings")
    try:
        return from_dict(ClusterProfile, data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def save_profile(profile: ClusterProfile | dict,
                 workspace: str | os.PathLike | None = None) -> Path:
    """Check and write the profile (or a mapping of its settings: a form's values)
    atomically; returns its path. A bad value is a ConfigError and nothing is written."""
    import yaml

    checked = from_dict(ClusterProfile, profile if isinstance(profile, dict) else
                        to_dict(profile))
    path = profile_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, yaml.safe_dump(to_dict(checked), sort_keys=False))
    return path


def updated(profile: ClusterProfile, changes: dict) -> ClusterProfile:
    """``profile`` with ``changes`` (setting -> value) applied and checked."""
    return from_dict(ClusterProfile, {**to_dict(profile), **changes})
