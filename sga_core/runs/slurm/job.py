"""What a SLURM job runs around the run folder's command.sh (``slurm.sh``):

- ``python -m sga_core.runs.slurm.job start RUN_DIR``: records the node, the job id and the
  time the job waited in status.json; exits 3 (and the job ends) when the run was cancelled
  before it started, so such a run never trains;
- ``python -m sga_core.runs.slurm.job evaluate RUN_DIR``: evaluates the completed run in this
  job when its config asks for it and the trainer did not evaluate in-process.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from sga_core.fileio import now_iso


def start(run_dir: Path) -> int:
    from sga_core.runs import status as run_status
    from sga_core.runs.folder import CANCEL_FILE
    from sga_core.runs.slurm.client import parse_time

    st = run_status.read_run(run_dir)
    if (run_dir / CANCEL_FILE).exists() or st.get("state") in run_status.FINAL_STATES:
        if st.get("state") not in run_status.FINAL_STATES:
            run_status.write_run(run_dir, "cancelled", ended_at=now_iso(),
                                 error="cancelled before it started")
        print(f"run {run_dir.name} was cancelled before it started: not training", flush=True)
        return 3
    submitted = parse_time(st.get("slurm_submitted_at") or "")
    array = os.environ.get("SLURM_ARRAY_JOB_ID")
    job = (f"{array}_{os.environ.get('SLURM_ARRAY_TASK_ID')}" if array else
           os.environ.get("SLURM_JOB_ID"))
    fields = {"slurm_node": os.environ.get("SLURMD_NODENAME") or os.uname().nodename,
              "slurm_started_at": now_iso()}
    if job:
        fields["slurm_job_id"] = job
    if submitted:
        fields["slurm_wait_s"] = round(max(0.0, time.time() - submitted), 1)
    run_status.write_run(run_dir, **fields)
    print(f"[job] run {run_dir.name}: job {job} on {fields['slurm_node']}", flush=True)
    return 0


def evaluate(run_dir: Path) -> int:
    from sga_core.runs import launch

    if not launch.should_evaluate(run_dir):
        return 0
    proc = launch.start_eval(run_dir)
    proc.wait()
    st = launch.finish_eval(run_dir, proc.returncode)
    print(f"[job] evaluation {st.get('state')}", flush=True)
    return 0 if st.get("state") == "completed" else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in ("start", "evaluate"):
        print("usage: python -m sga_core.runs.slurm.job start|evaluate RUN_DIR",
              file=sys.stderr)
        return 2
    run_dir = Path(argv[1]).resolve()
    return (start if argv[0] == "start" else evaluate)(run_dir)


if __name__ == "__main__":
    sys.exit(main())
