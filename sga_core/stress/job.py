"""What a stress-test process records about itself in its run's ``stress_status.json``
(docs/stress-tests.md#queued-as-a-job), so that the Runs page can show its progress and an
ETA, and a cancel or a crash reads as such.

The process writes only once it holds the run's ``stress/`` folder (a second stress process
on the same run is refused before it writes anything): running with its pid, then the part
it is in (the baselines, then each attack: ``done``/``total``), the stage being scored and
its progress (``stage_done``/``stage_total``, at most about once a second), each result file
written (``results``), and how it ended: completed, cancelled (SIGTERM, Ctrl-C) or failed
with the error. Every write goes through :func:`sga_core.runs.status.write_stress`.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path

from sga_core.fileio import now_iso


class JobRecord:
    """The stress-test record of one run (``run_dir``) for the process that tests it."""

    def __init__(self, run_dir: str | os.PathLike, attacks: Sequence[str]):
        self.run_dir = Path(run_dir)
        self.attacks = list(attacks)
        self.parts: list[str] = []
        self.results: list[str] = []
        self.began = False
        self.last = {"stage": None, "t": 0.0}

    def _write(self, state: str | None = None, **fields) -> None:
        from sga_core.runs.status import write_stress

        try:
            write_stress(self.run_dir, state, **fields)
        except OSError:
            pass  # a status that cannot be written never stops the stress test

    def started(self, parts: Sequence[str]) -> None:
        """The process holds the stress folder; ``parts``: what it will do, in order (the
        baselines' scoring and the attacks)."""
        self.began = True
        self.parts = list(parts)
        self._write("running", pid=os.getpid(), host=socket.gethostname(),
                    started_at=now_iso(), ended_at=None, error=None, stage="starting",
                    done=0, total=len(self.parts), stage_done=0, stage_total=None,
                    attacks=self.attacks, results=[], exit_code=None)

    def part(self, index: int) -> None:
        """Part ``index`` of :attr:`parts` begins (the ones before it are done)."""
        self.last.update(stage=None, t=0.0)  # the part's first progress is written at once
        self._write(stage=self.parts[index], done=index, stage_done=0, stage_total=None,
                    stage_started_at=now_iso())

    def stop_if_ended(self) -> None:
        """Raise EvalCancelled when the record says this test should stop: a cancel was
        asked (``cancel_requested_at``), or it was settled as ended (its SLURM job is gone,
        so nothing waits for it; not a failure the workbench only inferred). A process whose
        job was cancelled but that outlived its job script (a cluster that tracks processes
        by parent) then stops at its next progress, instead of scoring on for hours under a
        "cancelled" record."""
        from sga_core.evaluation.common import EvalCancelled
        from sga_core.runs.slurm.states import inferred
        from sga_core.runs.status import FINAL_STATES, read_stress

        try:
            st = read_stress(self.run_dir)
        except Exception:  # noqa: BLE001 - an unreadable record stops nothing
            return
        if inferred(st):
            return  # the workbench only guessed its job was gone: SLURM's word decides
        if st.get("cancel_requested_at") or st.get("state") in FINAL_STATES:
            raise EvalCancelled(f"the stress test of {self.run_dir.name} was cancelled or "
                                "ended")

    def progress(self, stage: str, done: int, total: int) -> None:
        """A scoring stage's progress (written at most about once a second, after a check
        that the test should go on: :meth:`stop_if_ended`)."""
        now = time.monotonic()
        if stage != self.last["stage"] or done >= total or now - self.last["t"] >= 1.0:
            if self.began:
                self.stop_if_ended()
            fields = {"stage": stage, "stage_done": done, "stage_total": total}
            if stage != self.last["stage"]:
                fields["stage_started_at"] = now_iso()
            self.last.update(stage=stage, t=now)
            self._write(**fields)

    def wrote(self, key: str) -> None:
        """Result file ``<key>.json`` is written (whole)."""
        self.results.append(key)
        self._write(results=list(self.results))

    def ended(self, exc: BaseException | None = None) -> None:
        """How the process ended: ``exc`` None is completed; KeyboardInterrupt (SIGTERM
        turned into one, Ctrl-C) is cancelled; anything else failed, with the error."""
        if not self.began:
            return  # it never held the folder: what is recorded belongs to another
        if exc is None:
            self._write("completed", ended_at=now_iso(), error=None, stage=None,
                        done=len(self.parts), results=list(self.results))
            return
        from sga_core.evaluation.common import EvalCancelled

        stopped = isinstance(exc, (KeyboardInterrupt, EvalCancelled))
        msg = str(exc) if isinstance(exc, Exception) else ""
        error = "cancelled by request" if stopped else f"{type(exc).__name__}: {msg}"
        self._write("cancelled" if stopped else "failed", ended_at=now_iso(), error=error,
                    stage=None, results=list(self.results))
