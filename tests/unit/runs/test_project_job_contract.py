"""The job contract for a project's kinds of job (normal answers, r*, probe, import:
``where="project"`` in sga_core/runs/jobs): each starts through the one lifecycle and is
shown running while its process lives; a second start while it runs is refused; its process
killed with SIGKILL, it is shown failed within ``SETTLE_S`` seconds, saying so; and a new
start begins a fresh record. Real processes: a stand-in command in the kind's place (what
each kind computes is its own module's tests')."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys

import pytest

from sga_core.projects import jobs as project_jobs
from sga_core.projects.project import Project
from sga_core.runs import procs
from sga_core.runs.jobs import KINDS
from sga_core.runs.jobs import base as lifecycle
from tests.helpers.wait import wait_for

SETTLE_S = 10.0
PROJECT_KINDS = sorted(k for k, v in KINDS.items() if v.where == "project")


def test_the_project_kinds_are_the_registrys():
    assert PROJECT_KINDS == sorted(["generation", "import", "probe", "rstar"])


@pytest.mark.parametrize("key", PROJECT_KINDS)
def test_a_project_job_runs_refuses_a_second_start_and_is_failed_when_killed(tmp_path, key):
    kind = KINDS[key]
    project = Project("p", tmp_path / "p")
    project.path.mkdir()
    job_dir = project_jobs.job_dir(project, key)
    job_dir.mkdir()
    stand_in = dataclasses.replace(kind, argv=lambda d, req: [
        sys.executable, "-c", "print('ready', flush=True); import time; time.sleep(120)"])
    proc = lifecycle.start(stand_in, job_dir, {"q": 1}, q=1)
    try:
        wait_for(lambda: "ready" in kind.log_path(job_dir).read_text(), 60, "the job's start")
        st = project_jobs.status(project, key)
        assert st["state"] == "running" and st["pid"] == proc.pid and st["q"] == 1
        with pytest.raises(RuntimeError, match=f"a {key} job is already running"):
            project_jobs.start(project, key, kind.module, {})
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        failed = wait_for(lambda: (s := project_jobs.status(project, key))["state"]
                          == "failed" and s, SETTLE_S, "the killed job shown failed")
        assert "process vanished" in failed["error"], failed
        # a new start is a fresh record: nothing of the killed one stays
        again = lifecycle.start(stand_in, job_dir, {})
        try:
            st = project_jobs.status(project, key)
            assert st["state"] == "running" and "q" not in st and not st.get("error")
        finally:
            procs.kill_group(again, signal.SIGKILL)
            again.wait(30)
    finally:
        procs.kill_group(proc, signal.SIGKILL)
