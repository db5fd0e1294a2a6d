"""What a SLURM job runs around the run folder's command.sh (``slurm.sh``):

- ``python -m sga_core.runs.slurm.job start RUN_DIR``: records the node, the job id and the
  time the job waited in status.json; exits 3 (and the job ends) when the run was cancelled
  before it started, so such a run never trains. A failure the workbench only inferred (it
  took the job for gone: :func:`sga_core.runs.slurm.states.inferred`) does not stop it: the
  job is there, so the run trains;
- ``python -m sga_core.runs.slurm.job start --resume RUN_DIR``: the same, for a job that
  resumes (the profile's ``resume_after_stop``): a run stopped at a checkpoint starts again
  (the requeued job's next start) and SLURM's restart count is recorded;
- ``python -m sga_core.runs.slurm.job stopped RUN_DIR``: exits 0 when the training stopped
  at a checkpoint on a signal and nobody asked for a cancel (the job then requeues itself);
- ``python -m sga_core.runs.slurm.job evaluate RUN_DIR``: evaluates the completed run in this
  job when its config asks for it and the trainer did not evaluate in-process.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from sga_core.fileio import now_iso

#: what ``start`` exits with when the run does not train (it was cancelled, or stopped at a
#: checkpoint and not resumed): the only failure the job script turns into exit 0
NOT_STARTED = 3


def stopped_at_checkpoint(run_dir: Path, st: dict) -> bool:
    """The training stopped at a checkpoint on a signal (SLURM's before its time limit, a
    preemption's), and no cancel was asked for: the run is to continue."""
    from sga_core.runs.folder import CANCEL_FILE

    return (st.get("state") == "cancelled" and st.get("stopped_at_checkpoint") is not None
            and not st.get("cancel_requested_at") and not (run_dir / CANCEL_FILE).exists())


def stopped(run_dir: Path) -> int:
    from sga_core.runs import status as run_status

    st = run_status.read_run(run_dir)
    if not stopped_at_checkpoint(run_dir, st):
        return 1
    print(f"[job] run {run_dir.name} stopped at its checkpoint at step "
          f"{st['stopped_at_checkpoint']}: requeueing the job to continue", flush=True)
    return 0


def start(run_dir: Path, resume: bool = False) -> int:
    from sga_core.runs import status as run_status
    from sga_core.runs.folder import CANCEL_FILE
    from sga_core.runs.slurm.client import is_job_id, parse_time
    from sga_core.runs.slurm.states import inferred

    st = run_status.read_run(run_dir)
    if inferred(st) and not st.get("cancel_requested_at") and not (run_dir / CANCEL_FILE).exists():
        # the workbench took the job for gone (SLURM left it out of its answers), yet SLURM
        # starts it: SLURM is right, and the run trains
        print(f"[job] run {run_dir.name} was marked failed because SLURM did not list its "
              f"job; the job has started, so the run trains", flush=True)
        st = run_status.write_run(run_dir, "queued", ended_at=None, error=None, exit_code=None,
                                  slurm_state_final=None, slurm_reason=None,
                                  slurm_unseen=None, slurm_unseen_since=None,
                                  slurm_unseen_at=None)
    again = resume and stopped_at_checkpoint(run_dir, st)
    if again:  # the requeued job's next start: the run is queued again until it trains
        run_status.write_run(run_dir, "queued", ended_at=None, exit_code=None, error=None)
    elif stopped_at_checkpoint(run_dir, st):  # by hand: sbatch slurm.sh without resuming
        print(f"run {run_dir.name} stopped at a checkpoint: resume it with `python -m "
              f"sga_core train --resume {run_dir}`; not training from step 0", flush=True)
        return NOT_STARTED
    elif (run_dir / CANCEL_FILE).exists() or st.get("state") in run_status.FINAL_STATES:
        if st.get("state") not in run_status.FINAL_STATES:
            run_status.write_run(run_dir, "cancelled", ended_at=now_iso(),
                                 error="cancelled before it started")
        print(f"run {run_dir.name} was cancelled before it started: not training", flush=True)
        return NOT_STARTED
    submitted = parse_time(st.get("slurm_submitted_at") or "")
    array = os.environ.get("SLURM_ARRAY_JOB_ID")
    job = (f"{array}_{os.environ.get('SLURM_ARRAY_TASK_ID')}" if array else
           os.environ.get("SLURM_JOB_ID"))
    fields = {"slurm_node": os.environ.get("SLURMD_NODENAME") or os.uname().nodename,
              "slurm_started_at": now_iso()}
    if job and is_job_id(job):  # (SLURM's own variables; checked like every id read)
        fields["slurm_job_id"] = job
    if os.environ.get("SLURM_RESTART_COUNT", "").isdigit():  # set once SLURM requeued it
        fields["slurm_restarts"] = int(os.environ["SLURM_RESTART_COUNT"])
    if submitted and not again:  # (a requeued start keeps the first wait)
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
    argv = list(sys.argv[1:] if argv is None else argv)
    resume = argv[0:1] == ["start"] and "--resume" in argv
    if resume:
        argv.remove("--resume")
    if len(argv) != 2 or argv[0] not in ("start", "stopped", "evaluate"):
        print("usage: python -m sga_core.runs.slurm.job start [--resume]|stopped|evaluate "
              "RUN_DIR", file=sys.stderr)
        return 2
    run_dir = Path(argv[1]).resolve()
    if argv[0] == "start":
        return start(run_dir, resume)
    return (stopped if argv[0] == "stopped" else evaluate)(run_dir)


if __name__ == "__main__":
    sys.exit(main())
