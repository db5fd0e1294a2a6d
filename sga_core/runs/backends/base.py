"""What a backend is: where the jobs of run folders run (this machine's queue, SLURM, ...).

The pages, the CLI and the queue call these methods through :func:`sga_core.runs.backends.
backend_of` (the backend a job was sent to, read from its status) or :func:`~sga_core.runs.
backends.backend` (by name, for new runs). No code outside a backend's own module (or
folder) asks which backend a job went to.

A new backend is one module of :mod:`sga_core.runs.backends` with a ``BACKEND`` (a subclass
of :class:`Backend`), and, if it needs more room, a folder of its own beside it
(``runs/slurm/``); docs/architecture.md#backends says how many files each needs.
"""

from __future__ import annotations

import os
from pathlib import Path


class Backend:
    """One place jobs run. Every method takes the job's kind and its run folder."""

    #: its name (``--backend NAME``, the Train page's choice, ``backend`` in status.json)
    name: str = ""
    #: what a person reads ("this machine's queue")
    label: str = ""
    #: whether the CLI may run a job of it in its own foreground (``train`` without
    #: ``--queue``); a backend that is not gives its jobs to a scheduler and returns at once
    foreground: bool = False

    # --- which jobs are its own ---------------------------------------------------------------
    def owns(self, status: dict) -> bool:
        """Whether a job whose status is ``status`` was sent to this backend."""
        return status.get("backend") == self.name

    def unsure(self, status: dict) -> bool:
        """Whether a final state in ``status`` is only the workbench's inference (the job
        may still run there, so a cancel must still reach it)."""
        return False

    def unsure_reason(self, status: dict) -> str | None:
        """Why a job that looks ended must not be resumed yet (None: it may be): its end is
        only inferred, and it may still run there."""
        return None

    def unavailable(self) -> str | None:
        """Why this backend cannot take jobs on this machine now (None: it can)."""
        return None

    # --- the lifecycle ----------------------------------------------------------------------
    def launch(self, cfgs: list, root: str | os.PathLike | None = None, *,
               after: Path | None = None, name: str | None = None, **options) -> list[Path]:
        """Make the run folders of ``cfgs`` and send their training here; ``after``: a run
        folder whose training (and evaluation) must end well before these start; ``name``:
        the group's name (a sweep). Returns the folders."""
        raise NotImplementedError

    def submit(self, kind, run_dir: Path, request: dict) -> dict:
        """Send a job of ``kind`` of an existing run folder (an evaluation, a stress test)
        with its ``request``; returns its status as shown."""
        raise NotImplementedError

    def cancel(self, kind, run_dir: Path) -> dict:
        """Stop a job of ``kind`` (idempotent: a job that ended is left as it is; one not
        started never starts); returns its status as shown."""
        raise NotImplementedError

    def view(self, key: str, run_dir: Path, status: dict) -> tuple[dict, bool]:
        """``(status as this backend knows it, sure)`` for the job ``key`` ("run", "eval",
        ...: :data:`sga_core.runs.jobs.KINDS`) of a run folder: its scheduler's state (a
        verdict it gives once is recorded, through the kind's status writer). Not ``sure``:
        the processes on this machine tell the rest (:func:`sga_core.runs.procs.derive`),
        as they do for the default."""
        return status, False

    def resume(self, run_dir: Path, *, root=None, here: bool = False,
               workspace=None) -> dict:
        """Send a failed or cancelled run with a checkpoint back here, to continue from it
        (ValueError saying why it cannot, the run left as it was). ``here``: its caller runs
        it (a backend that cannot ignores it); ``workspace``: the projects folder whose
        settings a backend reads."""
        raise NotImplementedError

    def log(self, kind, run_dir: Path, n_lines: int = 40) -> str:
        """The last lines of the job's log."""
        return kind.log_tail(run_dir, n_lines)

    def describe(self, status: dict) -> str | None:
        """A line saying where the job is (its scheduler's id, node, reason); None: nothing
        to add."""
        return None

    def job_name(self, status: dict) -> str | None:
        """What its scheduler calls the job ("job 12"; None: it has no name there)."""
        return None

    def wait_reason(self, run_dir: Path, status: dict) -> str | None:
        """Why a queued run has not started (None: nothing to say)."""
        return None

    def launched(self, run_dir: Path) -> list[str]:
        """What the CLI prints of a run it just sent here (its job, its script)."""
        return []
