"""The Runs page's Resume button (docs/long-runs.md): offered for a failed or cancelled run
with a checkpoint, and it queues that run to continue in its own folder; a run sent to
SLURM is resubmitted to SLURM (docs/slurm.md)."""

from __future__ import annotations

import fcntl

import pytest

from sga_core.config import TrainConfig
from sga_core.runs import checkpoints as ckpts
from sga_core.runs.create import create_run
from sga_core.runs.folder import CHECKPOINT_INFO, SLURM_SCRIPT
from sga_core.runs.queue import RUNNER_LOCK
from sga_core.runs.status import read_run, write_run
from tests.helpers.resume import write_checkpoint
from tests.helpers.ui import open_page, shown


def _run(ui_env, run_id: str, state: str, checkpoint: int | None):
    forget = ui_env / "f.jsonl"
    forget.write_text('{"question": "q", "answer": "a"}\n')
    run_dir = create_run(TrainConfig.from_dict({
        "run_id": run_id, "method": "ga", "data": {"forget": str(forget)},
        "eval": {"enabled": False}}), ui_env / "runs")
    if checkpoint is not None:
        write_checkpoint(run_dir, checkpoint)
    write_run(run_dir, state, step=checkpoint or 0, total_steps=20,
              error="stopped" if state != "completed" else None)
    return run_dir


def _page_on(run_id: str):
    at = open_page("app_pages/runs.py")
    at.radio(key="runs.filter").set_value("all projects").run()
    at.selectbox(key="runs.select").set_value(run_id).run()
    assert not at.exception, at.exception
    return at


def test_resume_queues_a_cancelled_run_that_has_a_checkpoint(ui_env):
    run_dir = _run(ui_env, "cut", "cancelled", 10)
    # hold the runner's lock: the page must not start a real runner (and a training)
    with open(ui_env / "runs" / RUNNER_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        at = _page_on("cut")
        button = at.button(key="runs.resume")
        assert not button.disabled and "step 10" in button.help
        button.click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
    st = read_run(run_dir)
    assert st["state"] == "queued" and st["resume"] is True and st["mode"] == "queue"
    assert any("Queued cut to resume from the checkpoint at step 10" in shown(s.value)
               for s in at.success)


def test_a_refused_resume_says_which_file_and_leaves_the_run_failed(ui_env):
    """A checkpoint torn since the page offered it: the button says why, naming the file,
    and the run stays failed (resumable once fixed), not queued for good."""
    run_dir = _run(ui_env, "torn", "failed", 10)
    (ckpts.latest(run_dir)[1] / CHECKPOINT_INFO).write_text('{"format": 2, "st')
    with open(ui_env / "runs" / RUNNER_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        at = _page_on("torn")
        at.button(key="runs.resume").click().run()
        assert not at.exception, at.exception
    assert any("checkpoint.json" in shown(e.value) for e in at.error), \
        [e.value for e in at.error]
    assert read_run(run_dir)["state"] == "failed"


def test_resume_is_not_offered_without_a_checkpoint_or_for_a_completed_run(ui_env):
    _run(ui_env, "no-ckpt", "failed", None)
    _run(ui_env, "done", "completed", 10)
    for run_id in ("no-ckpt", "done"):
        at = _page_on(run_id)
        assert at.button(key="runs.resume").disabled, run_id


def test_the_train_form_offers_checkpoints_and_trackers_and_refuses_a_missing_one(
        ui_env, tiny_model_dir):
    """The long-run settings come from their param() fields (no page edits); a tracker
    that is not installed is one clear error at launch, and no run folder is made."""
    import importlib.util

    from tests.ui.test_train import fill_tiny_form

    if importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed here")
    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    assert at.number_input(key="train.f.ta.save_every").value == 0
    assert at.number_input(key="train.f.ta.keep_checkpoints").value == 1
    at.number_input(key="train.f.ta.save_every").set_value(5).run()
    at.text_input(key="train.f.ta.report_to").set_value("tensorboard, wandb").run()
    at.button(key="train.launch").click().run()
    assert not at.exception, at.exception
    assert any("training.report_to: wandb is asked for but not installed here"
               in shown(e.value) for e in at.error), [e.value for e in at.error]
    runs = ui_env / "runs"
    assert not runs.exists() or not [p for p in runs.iterdir() if not p.name.startswith(".")]


@pytest.mark.slow
def test_resume_resubmits_a_slurm_run_to_slurm(slurm, ui_env):
    """A run sent to SLURM goes back to SLURM (a new job; with no profile kept in its
    folder, the workspace's), never to this machine's queue. The node is kept busy, so
    the job waits and trains nothing here."""
    from sga_core.runs.slurm.profile import ClusterProfile, save_profile
    from tests.helpers.slurm import wait_for

    save_profile(ClusterProfile(cpus=1, time_limit="15"), ui_env / "workspace")
    run_dir = _run(ui_env, "cut", "failed", 10)
    write_run(run_dir, mode="slurm", backend="slurm", slurm_job_id="4242",
              slurm_state_final="FAILED", slurm_started_at="2026-01-01T00:00:00")
    blocker = slurm.run("sbatch", "--parsable", "-c", str(slurm.cpus), "-o", "/dev/null",
                        "--wrap", "sleep 600").strip()
    wait_for(lambda: any(j["id"] == blocker and j["state"] == "RUNNING"
                         for j in slurm.jobs()), 120, "the blocking job to run")
    with open(ui_env / "runs" / RUNNER_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        at = _page_on("cut")
        at.button(key="runs.resume").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
    st = read_run(run_dir)
    job = st["slurm_job_id"]
    assert (st["state"], st["mode"]) == ("queued", "slurm") and job != "4242", st
    assert next(j for j in slurm.jobs() if j["id"] == job)["state"] == "PENDING"
    assert "job start --resume" in (run_dir / SLURM_SCRIPT).read_text()
    assert any(f"Resubmitted cut to SLURM as job {job} to resume from the checkpoint at "
               "step 10" in shown(s.value) for s in at.success), [s.value for s in at.success]
