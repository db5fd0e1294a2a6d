"""SLURM: each job a batch job (one job array for a sweep or a seed group), its state read
from squeue and sacct. The backend's own folder is :mod:`sga_core.runs.slurm` (the client,
the scripts, the states, the job's own entry point); this module is its face to the rest of
the workbench (docs/slurm.md)."""

from __future__ import annotations

import os
from pathlib import Path

from sga_core.runs.backends.base import Backend


class Slurm(Backend):
    name = "slurm"
    label = "SLURM"

    def owns(self, status: dict) -> bool:
        return bool(status.get("slurm_job_id")) or status.get("mode") == self.name \
            or status.get("backend") == self.name

    def unsure(self, status: dict) -> bool:
        from sga_core.runs.slurm.states import inferred

        return inferred(status)

    def unavailable(self) -> str | None:
        from sga_core.runs.slurm.client import unavailable

        return unavailable()

    def launch(self, cfgs: list, root: str | os.PathLike | None = None, *, after=None,
               name=None, chain: bool = False, workspace=None, **options) -> list[Path]:
        from sga_core.runs.slurm import backend as slurm

        if chain:
            return slurm.submit_chain(cfgs, root, workspace=workspace)
        return slurm.submit(cfgs, root, workspace=workspace, name=name)

    def submit(self, kind, run_dir: Path, request: dict) -> dict:
        from sga_core.runs.slurm import backend as slurm

        if kind.key == "eval":
            return slurm.submit_eval(run_dir, request.get("sets") or None,
                                     protocol=request.get("protocol"),
                                     after=request.get("after"))
        if kind.key == "stress":
            return slurm.submit_stress(run_dir, request["attacks"], request.get("settings"),
                                       request.get("options"))
        raise ValueError(f"a {kind.name} is not sent to SLURM this way (launch it)")

    def cancel(self, kind, run_dir: Path) -> dict:
        from sga_core.runs.slurm import backend as slurm

        if kind.key == "run":
            return slurm.cancel(run_dir)
        st = kind.effective(run_dir)
        if st.get("slurm_job_id") and st.get("state") in ("queued", "running"):
            return slurm.cancel_job(run_dir, kind)
        # not (or no longer) SLURM's: a request waiting on this machine's queue (SLURM was
        # unavailable when it was asked), or a record that ended
        from sga_core.runs.backends import backend

        return backend("local").cancel(kind, run_dir)

    def view(self, key: str, run_dir: Path, status: dict) -> tuple[dict, bool]:
        from sga_core.runs.jobs import kind
        from sga_core.runs.slurm import states

        if not status.get("slurm_job_id"):
            return status, False  # never submitted: this machine's processes tell
        shown = states.run_view(run_dir, status, kind(key).write)
        # SLURM cannot be asked now: the processes on this machine can (slurm_problem says why)
        return shown, not shown.get("slurm_problem")

    def resume(self, run_dir: Path, *, root=None, here: bool = False,
               workspace=None) -> dict:
        from sga_core.runs.slurm import backend as slurm

        return slurm.resume(run_dir, workspace=workspace)

    def job_name(self, status: dict) -> str | None:
        jid = status.get("slurm_job_id")
        return f"job {jid}" if jid else None

    def describe(self, status: dict) -> str | None:
        """The job's id, node and time waited, SLURM's reason while it waits, and why SLURM
        cannot be asked when it cannot."""
        from sga_core.runs.progress import fmt_seconds
        from sga_core.runs.slurm.states import wait_s

        jid = status.get("slurm_job_id")
        if not jid:
            return None
        parts = [f"SLURM job {jid}" + (f": {status['slurm_reason']}"
                                        if status.get("slurm_reason") else "")]
        if status.get("slurm_node"):
            parts.append(f"node {status['slurm_node']}")
        wait = wait_s(status)
        if wait is not None:
            parts.append(f"waited {fmt_seconds(wait)}")
        if status.get("slurm_problem"):
            parts.append(f"SLURM cannot be asked: {status['slurm_problem']}")
        return " · ".join(parts)

    def unsure_reason(self, status: dict) -> str | None:
        if not self.unsure(status) or status.get("cancel_requested_at"):
            return None
        return (f"it was only inferred to have ended: SLURM may still run its job "
                f"{status.get('slurm_job_id')}; cancel the run first, then resume it")

    def launched(self, run_dir: Path) -> list[str]:
        from sga_core.runs import status as run_status
        from sga_core.runs.folder import SLURM_SCRIPT

        jid = run_status.read_run(run_dir).get("slurm_job_id")
        return [f"slurm job:  {jid} (batch script: {Path(run_dir) / SLURM_SCRIPT})"]

    def log(self, kind, run_dir: Path, n_lines: int = 40) -> str:
        from sga_core.runs.folder import SLURM_LOG, tail

        own = kind.log_tail(run_dir, n_lines)
        job = tail(Path(run_dir) / SLURM_LOG, n_lines)
        return "\n".join(t for t in (own, job) if t)


BACKEND = Slurm()
