"""An old status record (a pid written without its start time) whose pid the kernel has
since given to a process that is not the workbench's: the run or evaluation is not shown as
running for as long as that stranger lives (a cancel could never end it), and the stranger
is not signalled. A record of a workbench process stays running."""

from __future__ import annotations

import subprocess
import sys

from sga_core.runs import procs, queue
from sga_core.runs import status as run_status


def test_a_stranger_with_an_old_records_pid_is_not_our_process(tmp_path):
    stranger = procs.spawn(["sleep", "120"], tmp_path / "stranger.log", nice=0)
    ours = procs.spawn([sys.executable, "-c", "import sga_core, time; time.sleep(120)"],
                       tmp_path / "ours.log", nice=0)
    try:
        views = {}
        for name, proc in (("stranger", stranger), ("ours", ours)):
            run_dir = tmp_path / name
            run_dir.mkdir()
            (run_dir / "config.yaml").write_text("{}\n")
            run_status.write_run(run_dir, "running", pid=proc.pid, pid_start=None,
                                 launcher_pid=None, launcher_pid_start=None)
            run_status.write_eval(run_dir, "running", pid=proc.pid, pid_start=None)
            views[name] = (run_status.effective_run(run_dir)["state"],
                           run_status.effective_eval(run_dir)["state"])
        assert views["ours"] == ("running", "running")
        assert views["stranger"] == ("failed", "failed"), views
        assert queue.cancel_eval(tmp_path / "stranger")["state"] != "running"
        try:
            stranger.wait(2)
        except subprocess.TimeoutExpired:
            pass
        assert stranger.poll() is None, "a stranger holding a recorded pid was signalled"
    finally:
        for proc in (stranger, ours):
            proc.kill()
            proc.wait(60)
