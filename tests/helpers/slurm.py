"""A real single-node SLURM cluster for the tests: Debian's ``slurm-wlm`` and ``munge``, a
generated ``slurm.conf`` in a temporary folder, and ``munged``, ``slurmctld`` and ``slurmd``
started on this machine with their own ports, sockets and spool folders (nothing of the
system's configuration is read or changed). ``SLURM_CONF`` points the client tools at it.

:func:`missing` says why no cluster can be started (the packages are absent); the
``slurm_cluster`` fixture (tests/conftest.py) skips with that reason. Every daemon started
here is stopped by :meth:`LocalSlurm.stop`, by its own pid, also after a failed start.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path

from tests.helpers.wait import wait_for  # noqa: F401  (the SLURM tests import it from here)

DAEMONS = {"munged": "/usr/sbin/munged", "slurmctld": "/usr/sbin/slurmctld",
           "slurmd": "/usr/sbin/slurmd"}
CLIENTS = ("sbatch", "squeue", "sacct", "scancel", "sinfo", "scontrol")
PARTITION = "debug"


def missing() -> str | None:
    """Why a local cluster cannot be started here, or None."""
    for path in DAEMONS.values():
        if not os.access(path, os.X_OK):
            return (f"{path} is not installed (`make slurm-deps` installs Debian's slurm-wlm "
                    f"and munge)")
    for name in CLIENTS:
        if shutil.which(name) is None:
            return f"{name} is not on PATH (Debian's slurm-client)"
    if os.geteuid() != 0:
        return "the local SLURM cluster needs root (slurmd runs jobs as their user)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slurm_conf(folder: Path, node: str, cpus: int, ctld_port: int, slurmd_port: int) -> str:
    """The configuration of a one-node cluster in ``folder``: ``proctrack/linuxproc`` and
    ``task/none`` (no cgroups in a container), no accounting database (``sacct`` has nothing;
    ``squeue -t all`` keeps ended jobs for MinJobAge), short kill, return-to-service
    and requeue waits so a test sees SLURM's decisions quickly."""
    f = folder
    return "\n".join([
        "ClusterName=sgatest",
        f"SlurmctldHost={node}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        # cred_expire: a requeued job waits this long before it may start again (120 s
        # by default); 30 s keeps the requeue tests short and a launch's credential valid
        f"AuthInfo=socket={f / 'munge' / 'munge.socket'},cred_expire=30",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={f / 'state'}",
        f"SlurmdSpoolDir={f / 'spool'}",
        f"SlurmctldPidFile={f / 'slurmctld.pid'}",
        f"SlurmdPidFile={f / 'slurmd.pid'}",
        f"SlurmctldLogFile={f / 'slurmctld.log'}",
        f"SlurmdLogFile={f / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SchedulerType=sched/builtin",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "ReturnToService=2",
        "MinJobAge=3600",
        "KillWait=3",
        "InactiveLimit=0",
        "SlurmdTimeout=30",
        "MessageTimeout=30",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={node} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


class LocalSlurm:
    """munged + slurmctld + slurmd for one node, under ``folder``."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.node = socket.gethostname().split(".")[0]
        self.cpus = os.cpu_count() or 1
        self.conf = self.folder / "slurm.conf"
        self.procs: dict[str, subprocess.Popen] = {}
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    # --- start --------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> LocalSlurm:
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, timeout: float) -> None:
        f = self.folder
        for sub in ("munge", "state", "spool"):
            (f / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(f, 0o755)
        os.chmod(f / "munge", 0o700)
        key = f / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        self.conf.write_text(slurm_conf(f, self.node, self.cpus, free_port(), free_port()))
        socket_path = f / "munge" / "munge.socket"
        self._spawn("munged", [DAEMONS["munged"], "--foreground", "--force",
                               f"--key-file={key}", f"--socket={socket_path}",
                               f"--pid-file={f / 'munge' / 'munged.pid'}",
                               f"--log-file={f / 'munge' / 'munged.log'}",
                               f"--seed-file={f / 'munge' / 'munged.seed'}"])
        wait_for(socket_path.exists, timeout, "munged's socket")
        self._spawn("slurmctld", [DAEMONS["slurmctld"], "-D", "-i", "-f", str(self.conf)])
        self.start_slurmd(timeout)

    def start_slurmd(self, timeout: float = 120.0) -> None:
        """Start the node's daemon and wait until the node is idle."""
        self._spawn("slurmd", [DAEMONS["slurmd"], "-D", "-f", str(self.conf),
                               "-N", self.node])
        wait_for(self.node_idle, timeout, f"node {self.node} idle in sinfo "
                                          f"(logs in {self.folder})", interval=0.5)

    def stop_slurmd(self) -> None:
        """Stop the node's daemon (a node failure, as the controller sees it)."""
        proc = self.procs.pop("slurmd")
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.folder / f"{name}.out", "ab")
        try:
            self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, env=self.env,
                                                start_new_session=True)
        finally:
            log.close()
        if self.procs[name].poll() is not None:
            raise RuntimeError(f"{name} exited at once; see {self.folder / (name + '.out')}")

    # --- state --------------------------------------------------------------------------

    def run(self, *argv: str, check: bool = True, timeout: float = 60.0) -> str:
        out = subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                             timeout=timeout)
        if check and out.returncode:
            raise RuntimeError(f"{' '.join(argv)}: {out.stderr.strip() or out.stdout}")
        return out.stdout

    def node_state(self) -> str:
        for name, proc in list(self.procs.items()):
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited (code {proc.returncode}); see "
                                   f"{self.folder / (name + '.out')} and its log")
        try:
            return self.run("sinfo", "-h", "-N", "-o", "%T", check=False,
                            timeout=30).strip()
        except subprocess.TimeoutExpired:
            return ""

    def node_idle(self) -> bool:
        return self.node_state() == "idle"

    def jobs(self) -> list[dict]:
        """Every job slurmctld knows (``squeue -t all``), one dict per job or array task."""
        text = self.run("squeue", "-h", "-r", "-t", "all", "-o", "%i|%T|%r|%j")
        rows = []
        for line in text.splitlines():
            jid, state, reason, name = line.split("|", 3)
            rows.append({"id": jid, "state": state, "reason": reason, "name": name})
        return rows

    def cancel_all(self) -> None:
        """Cancel every job (between tests: the next one starts on an empty node)."""
        self.run("scancel", "-u", "root", check=False)
        wait_for(lambda: not [j for j in self.jobs()
                              if j["state"] in ("PENDING", "RUNNING", "COMPLETING",
                                                "CONFIGURING", "SUSPENDED")],
                 120, "every job to end")

    def kill_job_processes(self, pid: int) -> list[int]:
        """SIGKILL ``pid`` and its ancestors up to and including the job's ``slurmstepd``
        (what a node's death does to a job; each by its own pid). Returns the pids."""
        chain, cur, found = [], pid, False
        while cur > 1 and not found:
            try:
                stat = Path(f"/proc/{cur}/stat").read_text()
            except OSError:
                break
            chain.append(cur)
            found = stat[stat.index("(") + 1:stat.rindex(")")].startswith("slurmstepd")
            cur = int(stat[stat.rindex(")") + 2:].split()[1])
        if not found:
            raise RuntimeError(f"pid {pid} is not a process of a SLURM job here")
        for p in reversed(chain):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return chain

    # --- stop ---------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every daemon started here (slurmd, slurmctld, munged; by pid, each waited
        for, SIGKILL after a grace)."""
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
