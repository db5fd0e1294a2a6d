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
# ASCII digits only (\d would take Arabic-Indic and other digits, which sbatch refuses)
TIME_RE = re.compile(r"^([0-9]+-)?[0-9]+(:[0-9]{1,2}){0,2}$|^$")
MEM_RE = re.compile(r"^$|^[0-9]+[KMGT]?$", re.IGNORECASE)
NAME_RE = re.compile(r"^[A-Za-z0-9_.,:=+-]*$")
#: the longest value of each kind of setting (a partition, account, ... name; a time or a
#: memory size; one extra #SBATCH or setup line) and the most lines of each list
NAME_MAX, SIZE_MAX, LINE_MAX, LINES_MAX = 128, 32, 1000, 100
LINE_SETTINGS = ("extra_sbatch", "setup")


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
            value = getattr(self, key)
            if len(value) > NAME_MAX:
                return f"{key}: {len(value)} characters is too long (at most {NAME_MAX})"
            if not NAME_RE.match(value):
                return f"{key}: {value!r} has characters SLURM names never have"
        for key in ("time_limit", "mem"):
            if len(getattr(self, key)) > SIZE_MAX:
                return (f"{key}: {len(getattr(self, key))} characters is too long (at most "
                        f"{SIZE_MAX})")
        if not TIME_RE.match(self.time_limit.strip()):
            return (f"time_limit: {self.time_limit!r} is not a SLURM time (minutes, H:MM:SS or "
                    "D-HH:MM:SS)")
        if not MEM_RE.match(self.mem.strip()):
            return f"mem: {self.mem!r} is not a SLURM memory size (e.g. 32G, 4000M)"
        for key in LINE_SETTINGS:
            lines = getattr(self, key)
            if len(lines) > LINES_MAX:
                return f"{key}: {len(lines)} lines is too many (at most {LINES_MAX})"
            long = next((ln for ln in lines if len(ln) > LINE_MAX), None)
            if long is not None:
                return (f"{key}: a line of {len(long)} characters is too long (at most "
                        f"{LINE_MAX})")
        for line in [*self.extra_sbatch, *self.setup]:
            if "\n" in line or "\r" in line:
                return "extra_sbatch/setup: one line per entry"
            if not line.replace("\t", " ").isprintable():
                return (f"extra_sbatch/setup: {ascii(line[:40])} has a control character "
                        "(a batch script line cannot hold it)")
        for line in self.extra_sbatch:
            if not line.strip().startswith("-"):
                return (f"extra_sbatch: {line[:40]!r} is not an sbatch option (it starts "
                        "with -)")
        return None


def as_lines(data: dict) -> dict:
    """``data`` with ``extra_sbatch`` and ``setup`` given as one string (``setup: 'source
    /opt/venv/bin/activate'`` in cluster.yaml, a YAML block of several lines) read as its
    lines: a line is never split at its spaces."""
    out = dict(data)
    for key in LINE_SETTINGS:
        if isinstance(out.get(key), str):
            out[key] = [ln for ln in out[key].splitlines() if ln.strip()]
    return out


def checked(data: dict) -> ClusterProfile:
    """A profile from a mapping of its settings, checked (ConfigError naming the key)."""
    return from_dict(ClusterProfile, as_lines(data))


def profile_path(workspace: str | os.PathLike | None = None) -> Path:
    from sga_core.projects import workspace_root

    return workspace_root(workspace) / PROFILE_FILE


def load_profile(workspace: str | os.PathLike | None = None) -> ClusterProfile:
    """The workspace's profile (the defaults when it has none); a damaged file is a
    ConfigError naming it and the bad key."""
    return read_profile(profile_path(workspace))


def read_profile(path: str | os.PathLike) -> ClusterProfile:
    """The profile in the YAML file ``path`` (the defaults when there is none): the
    workspace's, or the one a SLURM run was submitted with (its run folder's copy). A
    damaged file is a ConfigError naming it and the bad key."""
    path = Path(path)
    if not path.exists():
        return ClusterProfile()
    try:
        data = load_yaml(path.read_bytes(), path.name)
    except Exception as exc:
        raise ConfigError(f"{path}: not readable YAML ({str(exc).splitlines()[0]})") from None
    if data is None:
        return ClusterProfile()
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a mapping of profile settings")
    try:
        return checked(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def profile_text(profile: ClusterProfile) -> str:
    """The profile as its YAML file holds it."""
    import yaml

    return yaml.safe_dump(to_dict(profile), sort_keys=False)


def save_profile(profile: ClusterProfile | dict,
                 workspace: str | os.PathLike | None = None) -> Path:
    """Check and write the profile (or a mapping of its settings: a form's values)
    atomically; returns its path. A bad value is a ConfigError and nothing is written."""
    good = checked(profile if isinstance(profile, dict) else to_dict(profile))
    path = profile_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, profile_text(good))
    return path


def updated(profile: ClusterProfile, changes: dict) -> ClusterProfile:
    """``profile`` with ``changes`` (setting -> value) applied and checked."""
    return checked({**to_dict(profile), **changes})
