"""Checkpoints and resume (docs/long-runs.md): a run killed part-way (SIGKILL of its trainer)
and resumed with ``python -m sga_core train --resume RUN`` is the same run as one never
interrupted, step for step and weight for weight; a stop signal saves a checkpoint first;
a save cut short leaves the previous checkpoint usable; old checkpoints are pruned.

All on the tiny random Llama of ``conftest``, through the real entry points.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from sga_core.config import TrainConfig
from sga_core.runs import checkpoints as ckpts
from sga_core.runs import folder as runs
from sga_core.runs import launch
from sga_core.runs import status as run_status
from sga_core.runs.create import create_run
from sga_core.runs.folder import CHECKPOINT_INFO
from tests.helpers.cli import sga_cli
from tests.helpers.wait import wait_for as shared_wait_for

pytestmark = pytest.mark.slow

RUN_TIMEOUT = 300.0
STEPS = 20
TOLERANCE = 1e-6


# ----------------------------------------------------------------------------- helpers -----

@pytest.fixture(scope="module")
def normals_file(tmp_path_factory, demo_dir) -> Path:
    from sga_core.data import load_qa
    from sga_core.normals.idk import idk_normals

    path = tmp_path_factory.mktemp("normals") / "normals.jsonl"
    idk_normals(len(load_qa(demo_dir / "forget.jsonl")), 4, seed=3).save(path)
    return path


def make_cfg(model: Path, demo_dir: Path, normals: Path, method: str, run_id: str,
             **training) -> TrainConfig:
    """20 steps of batch 4 over the 10 demo rows: 3 batches an epoch, so step 10 is inside
    an epoch (a resume must find its place in the data order)."""
    data = {"forget": str(demo_dir / "forget.jsonl")}
    if method == "sga-lora":  # only the adapters are saved and loaded back
        method, training = "sga", {"lora_rank": 4, "lr": 1e-2, **training}
    if method == "sga":
        args = {"r": -0.8, "k": 4}
        data["normals"] = str(normals)
    else:  # NPO with a retain term: a frozen reference model and retain rows
        args = {"beta": 0.1, "retain_weight": 1.0}
        data["retain"] = str(demo_dir / "retain.jsonl")
    return TrainConfig.from_dict({
        "run_id": run_id, "model": str(model), "method": method, "method_args": args,
        "data": data,
        "training": {"batch_size": 4, "max_steps": STEPS, "lr": 1e-3, "seed": 7,
                     "probe_every": 1, "eval_nll": False, **training},
        "launch": {"device": "cpu"}, "eval": {"enabled": False}})


def wait_for(predicate, what: str, proc: subprocess.Popen):
    """The shared wait (tests/helpers/wait.py) on the trainer ``proc``, polled every 20 ms
    (the kill is to fall right after the checkpoint waited for)."""
    return shared_wait_for(predicate, RUN_TIMEOUT, what, interval=0.02, proc=proc)


def finish(run_dir: Path, proc: subprocess.Popen) -> dict:
    launch.finish(run_dir, proc.wait(RUN_TIMEOUT))
    return run_status.effective_run(run_dir)


def weights(run_dir: Path) -> dict:
    from safetensors.torch import load_file

    files = sorted((run_dir / "model").glob("*.safetensors"))  # a model, or an adapter
    assert len(files) == 1, files
    return load_file(str(files[0]))


def losses(run_dir: Path) -> list[tuple[int, float]]:
    return [(r["step"], r["loss"]) for r in runs.metrics(run_dir)]


def max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].double() - b[k].double()).abs().max()) for k in a)


def resume_cli(run_dir: Path) -> subprocess.CompletedProcess:
    return sga_cli("train", "--resume", run_dir.name, "--runs-dir", str(run_dir.parent),
                   timeout=RUN_TIMEOUT)


@pytest.fixture(scope="module", params=["sga", "npo", "sga-lora"])
def uninterrupted(request, tmp_path_factory, tiny_model_dir, demo_dir, normals_file):
    root = tmp_path_factory.mktemp(f"runs-{request.param}")
    cfg = make_cfg(tiny_model_dir, demo_dir, normals_file, request.param, "whole")
    run_dir = create_run(cfg, root)
    st = finish(run_dir, launch.start(run_dir))
    assert st["state"] == "completed", st
    return request.param, run_dir


# ------------------------------------------------------------------------------- tests -----

def test_a_run_killed_at_step_10_and_resumed_is_the_uninterrupted_run(
        uninterrupted, tiny_model_dir, demo_dir, normals_file, runs_dir):
    method, whole = uninterrupted
    cfg = make_cfg(tiny_model_dir, demo_dir, normals_file, method, "killed", save_every=10)
    run_dir = create_run(cfg, runs_dir)
    proc = launch.start(run_dir)
    wait_for(lambda: ckpts.latest(run_dir), "the checkpoint at step 10", proc)
    os.kill(run_status.read_run(run_dir)["pid"], signal.SIGKILL)
    assert proc.wait(60) == -signal.SIGKILL
    assert finish(run_dir, proc)["state"] == "failed"
    assert ckpts.latest(run_dir)[0] == 10
    logged = [r["step"] for r in runs.metrics(run_dir)]
    assert logged[:10] == list(range(1, 11))  # and perhaps a few steps past the checkpoint

    done = resume_cli(run_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    st = run_status.read_run(run_dir)
    assert st["state"] == "completed" and st["step"] == STEPS
    assert (st["resumes"], st["resumed_from"]) == (1, 10)
    # one line per step, none missing, none twice; the same losses and the same batches
    got, want = losses(run_dir), losses(whole)
    assert [s for s, _ in got] == list(range(1, STEPS + 1))
    assert max(abs(a - b) for (_, a), (_, b) in zip(got, want)) <= TOLERANCE
    assert [r["batch"] for r in runs.metrics(run_dir)] == \
        [r["batch"] for r in runs.metrics(whole)]
    probe_steps = sorted({r["step"] for r in runs.probes(run_dir)})
    assert probe_steps == list(range(0, STEPS + 1))
    assert len(runs.probes(run_dir)) == len(runs.probes(whole))
    assert max_diff(weights(run_dir), weights(whole)) <= TOLERANCE


def test_sigterm_saves_a_checkpoint_stops_and_resume_finishes_the_run(
        tiny_model_dir, demo_dir, normals_file, runs_dir):
    """A stop signal (SLURM's before a time limit) saves the state at the next step
    boundary and stops with its own exit code; keep_checkpoints keeps the newest."""
    cfg = make_cfg(tiny_model_dir, demo_dir, normals_file, "sga", "term", max_steps=400,
                   save_every=2, keep_checkpoints=2, probe_every=0)
    run_dir = create_run(cfg, runs_dir)
    proc = launch.start(run_dir)
    wait_for(lambda: (ckpts.latest(run_dir) or (0,))[0] >= 6, "three checkpoints", proc)
    proc.send_signal(signal.SIGTERM)  # a one-process run: the launcher is the trainer
    code = proc.wait(RUN_TIMEOUT)
    assert code == ckpts.STOPPED_EXIT
    st = finish(run_dir, proc)
    k = st["stopped_at_checkpoint"]
    assert st["state"] == "cancelled" and st["error"] == f"stopped: checkpoint saved at step {k}"
    assert st["step"] == k and 6 <= k < 400
    kept = ckpts.checkpoints(run_dir)
    assert [s for s, _ in kept][-1] == k and len(kept) == 2
    assert [r["step"] for r in runs.metrics(run_dir)] == list(range(1, k + 1))
    assert not (run_dir / "model").exists()  # the checkpoint is the run's state

    # the next attempt runs to the end (fewer steps: the config is the run's own)
    from sga_core.config import dump_config, load_config

    cfg2 = load_config(run_dir / "config.yaml")
    cfg2.training.max_steps = k + 4
    (run_dir / "config.yaml").write_text(dump_config(cfg2))
    done = resume_cli(run_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    st = run_status.read_run(run_dir)
    assert st["state"] == "completed" and st["resumed_from"] == k
    assert [r["step"] for r in runs.metrics(run_dir)] == list(range(1, k + 5))
    assert (run_dir / "model" / "config.json").exists()


def test_a_save_cut_short_leaves_the_previous_checkpoint_usable(
        tiny_model_dir, demo_dir, normals_file, runs_dir):
    cfg = make_cfg(tiny_model_dir, demo_dir, normals_file, "sga", "torn", max_steps=6,
                   save_every=3, probe_every=0)
    run_dir = create_run(cfg, runs_dir)
    proc = launch.start(run_dir)
    st = finish(run_dir, proc)
    assert st["state"] == "completed" and ckpts.latest(run_dir)[0] == 3
    # a kill during the save of step 5: its folder half-written beside its place
    torn = ckpts.checkpoints_dir(run_dir) / ckpts.temp_name(5)
    torn.mkdir()
    (torn / "model.safetensors").write_bytes(b"\0" * 100)
    assert ckpts.latest(run_dir)[0] == 3
    run_status.write_run(run_dir, "failed", error="killed during a save")
    done = resume_cli(run_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    st = run_status.read_run(run_dir)
    assert st["state"] == "completed" and st["resumed_from"] == 3
    assert [r["step"] for r in runs.metrics(run_dir)] == list(range(1, 7))
    assert not torn.exists()  # the next save's pruning removed it


def test_resume_refuses_a_run_without_checkpoint_or_a_completed_one(
        tiny_model_dir, demo_dir, normals_file, runs_dir):
    cfg = make_cfg(tiny_model_dir, demo_dir, normals_file, "sga", "plain", max_steps=2,
                   probe_every=0)
    run_dir = create_run(cfg, runs_dir)
    assert finish(run_dir, launch.start(run_dir))["state"] == "completed"
    done = resume_cli(run_dir)
    assert done.returncode != 0 and "only a failed, cancelled or timed-out run" in done.stderr
    run_status.write_run(run_dir, "failed")
    done = resume_cli(run_dir)
    assert done.returncode != 0 and "has no checkpoint to resume from" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.gpu
def test_a_resume_on_the_gpu_continues_the_loss_curve(tiny_model_dir, demo_dir,
                                                      normals_file, runs_dir):
    """On a CUDA device: stopped by SIGTERM at a checkpoint and resumed, the run's losses
    continue where they stopped, the same as a run never stopped."""
    def cfg(run_id, **kw):
        c = make_cfg(tiny_model_dir, demo_dir, normals_file, "sga", run_id, **kw)
        c.launch.device = "gpu"
        return c

    whole = create_run(cfg("gpu-whole"), runs_dir)
    assert finish(whole, launch.start(whole))["state"] == "completed"
    run_dir = create_run(cfg("gpu-cut", save_every=10), runs_dir)
    proc = launch.start(run_dir)
    wait_for(lambda: ckpts.latest(run_dir), "the checkpoint at step 10", proc)
    os.kill(run_status.read_run(run_dir)["pid"], signal.SIGKILL)
    finish(run_dir, proc)
    done = resume_cli(run_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    got, want = losses(run_dir), losses(whole)
    assert [s for s, _ in got] == list(range(1, STEPS + 1))
    # GPU kernels need not be bitwise reproducible: the curve continues, to float noise
    assert max(abs(a - b) for (_, a), (_, b) in zip(got, want)) <= 1e-3
    assert (ckpts.latest(run_dir)[1] / CHECKPOINT_INFO).exists()


# --------------------------------------------------- a resume trusts nothing it loads -----

class _Boom:
    """A pickle that, loaded, creates a file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory, tiny_model_dir, demo_dir):
    from tests.helpers.resume import checkpointed_run

    return checkpointed_run(tmp_path_factory.mktemp("stopped"), tiny_model_dir, demo_dir)


@pytest.fixture
def stopped(stopped_run, tmp_path):
    from tests.helpers.resume import copy_run

    return copy_run(stopped_run, tmp_path)


def trainer_resume(run_dir: Path) -> subprocess.CompletedProcess:
    """The trainer's own --resume (a requeued SLURM job's way), which no request_resume
    checked first."""
    import sys

    return subprocess.run([sys.executable, "-m", "sga_core.train", "--config",
                           str(run_dir / "config.yaml"), "--resume"], capture_output=True,
                          text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL,
                          env={**os.environ, "SGA_TRAIN_DIRECT": "1"})


def test_a_crafted_pickle_in_a_checkpoint_never_runs_and_resume_works(stopped, tmp_path):
    """Pickles where accelerate's save_state kept the states (the scheduler, the position,
    the random states, the optimizer) are never loaded: the marker their loading would
    create never appears, and the run resumes from the safe files."""
    import pickle

    marker = tmp_path / "PWNED"
    folder = ckpts.latest(stopped)[1]
    for name in ("custom_checkpoint_0.pkl", "custom_checkpoint_1.pkl", "random_states_0.pkl",
                 "scheduler.bin", "pytorch_model.bin", "scaler.pt"):
        (folder / name).write_bytes(pickle.dumps(_Boom(marker)))
    done = resume_cli(stopped)
    assert not marker.exists(), "a pickle in the checkpoint was loaded"
    assert done.returncode == 0, done.stdout + done.stderr
    st = run_status.read_run(stopped)
    assert st["state"] == "completed" and st["resumed_from"] == 4 and st["step"] == 6
    assert [r["step"] for r in runs.metrics(stopped)] == list(range(1, 7))


def test_the_trainer_refuses_garbage_random_states_before_changing_anything(stopped):
    """Random states that are a safetensors file but not random states: the trainer
    refuses naming the file, before it cuts logs, prunes checkpoints or counts a resume;
    with keep_checkpoints 1, the older good checkpoint is still there."""
    import torch
    from safetensors.torch import save_file

    from tests.helpers.resume import snapshot

    text = (stopped / "config.yaml").read_text()
    (stopped / "config.yaml").write_text(text.replace("keep_checkpoints: 2",
                                                      "keep_checkpoints: 1"))
    with open(stopped / "metrics.jsonl", "a") as fh:  # steps a killed run logged after it
        fh.write('{"step": 5, "loss": 1.0}\n')
    save_file({"torch": torch.zeros(7, dtype=torch.uint8),
               "python": torch.zeros(3, dtype=torch.int64),
               "numpy": torch.zeros(3, dtype=torch.int64)},
              str(ckpts.latest(stopped)[1] / ckpts.rng_file(0)))
    before = {k: v for k, v in snapshot(stopped).items() if k != "status.json"}
    done = trainer_resume(stopped)
    assert done.returncode != 0
    st = run_status.read_run(stopped)
    assert st["state"] == "failed" and "random_states_0.safetensors" in st["error"], st
    assert "resumes" not in st or not st["resumes"]
    assert {k: v for k, v in snapshot(stopped).items() if k != "status.json"} == before
    assert [s for s, _ in ckpts.checkpoints(stopped)] == [2, 4]


def test_a_max_steps_below_the_checkpoint_is_refused_by_the_trainer(stopped):
    text = (stopped / "config.yaml").read_text()
    (stopped / "config.yaml").write_text(text.replace("max_steps: 6", "max_steps: 3"))
    done = trainer_resume(stopped)
    st = run_status.read_run(stopped)
    assert done.returncode != 0 and st["state"] == "failed"
    assert "max_steps is 3" in st["error"] and "step 4" in st["error"], st
    assert [r["step"] for r in runs.metrics(stopped)] == list(range(1, 7))


def test_a_failed_resume_leaves_the_run_resumable(stopped):
    """A resume refused for its config leaves the run failed (not queued for good): once
    the config is fixed, it resumes."""
    good = (stopped / "config.yaml").read_text()
    (stopped / "config.yaml").write_text("training: [unclosed\n")
    done = resume_cli(stopped)
    assert done.returncode != 0 and "config.yaml" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert run_status.effective_run(stopped)["state"] == "failed"
    (stopped / "config.yaml").write_text(good)
    done = resume_cli(stopped)
    assert done.returncode == 0, done.stdout + done.stderr
    st = run_status.read_run(stopped)
    assert st["state"] == "completed" and st["resumed_from"] == 4 and st["resumes"] == 1


def test_a_tensorboard_folder_that_is_a_file_is_a_clear_error(tmp_path, tiny_model_dir,
                                                               demo_dir, normals_file):
    cfg = make_cfg(tiny_model_dir, demo_dir, normals_file, "sga", "tb-file", max_steps=2,
                   report_to=["tensorboard"])
    run_dir = create_run(cfg, tmp_path / "runs")
    (run_dir / "tensorboard").write_text("a file where the events go")
    st = finish(run_dir, launch.start(run_dir))
    assert st["state"] == "failed"
    assert "tensorboard is a file, not a folder" in st["error"], st["error"]
    assert "FileExistsError" not in st["error"]


def test_a_refused_resume_purges_no_tensorboard_events(tmp_path, tiny_model_dir, demo_dir):
    """TensorBoard's events after the checkpoint are purged only by a resume that goes
    ahead: one refused (damaged random states) leaves every step's events; the resume
    after it logs each later step once."""
    pytest.importorskip("tensorboard")
    from safetensors.torch import save_file

    from sga_core.runs.folder import TENSORBOARD_DIR
    from tests.e2e.test_trackers import scalars
    from tests.helpers.resume import checkpointed_run

    run_dir = checkpointed_run(tmp_path, tiny_model_dir, demo_dir, "tb-resume",
                               report_to=["tensorboard"])
    assert sorted(scalars(run_dir / TENSORBOARD_DIR)["train/loss"]) == [1, 2, 3, 4, 5, 6]
    import torch

    folder = ckpts.latest(run_dir)[1]
    info, rng = folder / CHECKPOINT_INFO, folder / ckpts.rng_file(0)
    kept = {p: p.read_bytes() for p in (info, rng)}
    for damage in (lambda: info.write_text('{"format": 2, "st'),  # found before the load
                   lambda: save_file({k: torch.zeros(2, dtype=torch.int64)  # found in it
                                      for k in ckpts.RNG_TENSORS}, str(rng))):
        damage()
        done = trainer_resume(run_dir)
        assert done.returncode != 0 and run_status.read_run(run_dir)["state"] == "failed"
        assert sorted(scalars(run_dir / TENSORBOARD_DIR)["train/loss"]) == [1, 2, 3, 4, 5, 6]
        for p, data in kept.items():
            p.write_bytes(data)
    done = resume_cli(run_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    series = scalars(run_dir / TENSORBOARD_DIR)["train/loss"]
    assert sorted(series) == [1, 2, 3, 4, 5, 6]
    logged = {r["step"]: r["loss"] for r in runs.metrics(run_dir)}
    assert all(abs(series[s] - logged[s]) <= 1e-5 * max(1, abs(logged[s])) for s in (5, 6))
