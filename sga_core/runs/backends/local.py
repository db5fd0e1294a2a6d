"""This machine's queue: run folders in state ``queued`` and request markers are the queue,
and one runner process per runs folder (:mod:`sga_core.runs.runner`) starts them, one slot
each (:mod:`sga_core.runs.queue`)."""

from __future__ import annotations

import os
from pathlib import Path

from sga_core.runs.backends.base import Backend
from sga_core.runs.jobs import base as jobs


class Local(Backend):
    name = "local"
    label = "this machine's queue"
    foreground = True

    def owns(self, status: dict) -> bool:
        return True  # the default: what no other backend owns runs here

    def launch(self, cfgs: list, root: str | os.PathLike | None = None, *, after=None,
               name=None, **options) -> list[Path]:
        # the queue starts runs in the order they were queued: a chain needs nothing more
        from sga_core.runs.queue import submit

        return [submit(c, root) for c in cfgs]

    def submit(self, kind, run_dir: Path, request: dict) -> dict:
        from sga_core.runs.queue import ensure_runner

        jobs.request(kind, run_dir, request)
        ensure_runner(Path(run_dir).parent)
        return {**kind.effective(run_dir), "state": "queued"}

    def cancel(self, kind, run_dir: Path) -> dict:
        from sga_core.runs.queue import cancel_training

        if kind.request is None:  # training: its queued status is its request
            return cancel_training(run_dir)
        return jobs.cancel(kind, run_dir)

    def wait_reason(self, run_dir: Path, status: dict) -> str | None:
        from sga_core.runs.queue import wait_reason

        return wait_reason(run_dir)

    def resume(self, run_dir: Path, *, root=None, here: bool = False,
               workspace=None) -> dict:
        from sga_core.runs.launch import request_resume
        from sga_core.runs.queue import ensure_runner

        st = request_resume(run_dir, "foreground" if here else "queue")
        if not here:
            ensure_runner(root or Path(run_dir).parent)
        return st


BACKEND = Local()
