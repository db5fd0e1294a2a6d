"""The training of a run: its ``accelerate launch`` command (``command.sh``), started from a
queued ``status.json`` (the run's own status is its request), stopped by the ``CANCEL``
file at the next step boundary. Its start and its end are :mod:`sga_core.runs.launch`'s
(a launcher and its trainer are two processes)."""

from __future__ import annotations

from sga_core.runs.jobs.base import JobKind
from sga_core.runs.procs import RUN_PIDS

KIND = JobKind(name="training", key="run", status="status_path", request=None,
               log="train_log_path", read="read_status", shown="status", pids=RUN_PIDS,
               priority=0)
