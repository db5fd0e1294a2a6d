"""Real training runs through the real entry points (docs/spec.md#5-the-run-directory,
docs/spec.md#8-the-command-line): ``accelerate launch -m sga_core.train`` started by
:mod:`sga_core.runs.launch`, ``bash command.sh`` and ``python -m sga_core ...``, all on the tiny
random Llama model from ``conftest``.

Each launch costs a few seconds of process start-up plus well under a second of training,
so the runs share what they can (module-scoped baseline runs).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

import sga_core
from sga_core.config import TrainConfig, dump_config, load_config
from sga_core.fileio import now_iso
from sga_core.model.losses import sga_coefficients
from sga_core.runs import folder as runs
from sga_core.runs import launch
from sga_core.runs import status as run_status
from sga_core.runs.command import command_text
from sga_core.runs.create import create_run
from sga_core.runs.listing import list_runs
from sga_core.runs.procs import pid_alive
from tests.helpers.cli import sga_cli
from tests.helpers.wait import wait_for as shared_wait_for

pytestmark = pytest.mark.slow

ROOT = Path(sga_core.__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
RUN_TIMEOUT = 240.0  # generous: another process may load the CPU; a run takes ~10-30 s
METRICS_FIELDS = ("step", "epoch", "loss", "forget_nll", "normal_nll", "r", "lr",
                  "grad_norm", "tokens_per_s", "elapsed_s")
RUN_FILES = {"config.yaml", "command.sh", "status.json", "metrics.jsonl", "probes.jsonl",
             "train.log", "model", "data", "env.json"}  # env.json: docs/spec.md#52-files


# ----------------------------------------------------------------------------- helpers -----

def make_cfg(model: Path, forget: Path, normals: Path | None = None, *, method: str = "sga",
             method_args: dict | None = None, launch_cfg: dict | None = None,
             run_id: str = "", **training) -> TrainConfig:
    """A small config: the tiny model, batch 4, 4 steps, lr 1e-3 (override via kwargs)."""
    if method_args is None:
        method_args = {"r": -0.8, "k": 4} if method == "sga" else {}
    data = {"forget": str(forget)}
    if normals is not None:
        data["normals"] = str(normals)
    return TrainConfig.from_dict({
        "run_id": run_id, "model": str(model), "method": method, "method_args": method_args,
        "data": data,
        "training": {"batch_size": 4, "max_steps": 4, "lr": 1e-3, "seed": 0, **training},
        "launch": launch_cfg or {},
        "eval": {"enabled": False},  # no follow-up evaluation (tests/e2e/test_evaluate.py does it)
    })


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(10)


def wait_proc(proc: subprocess.Popen, timeout: float = RUN_TIMEOUT) -> int:
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise


def run_to_end(run_dir: Path, timeout: float = RUN_TIMEOUT) -> dict:
    """launch.start + wait + launch.finish, as the runner does; returns the final status."""
    proc = launch.start(run_dir)
    launch.finish(run_dir, wait_proc(proc, timeout))
    return run_status.effective_run(run_dir)


def wait_for(predicate, timeout: float = RUN_TIMEOUT, what: str = "condition",
             proc: subprocess.Popen | None = None):
    """The shared wait (tests/helpers/wait.py) on the run ``proc``, killed (its group)
    when the wait times out."""
    try:
        return shared_wait_for(predicate, timeout, what, interval=0.1, proc=proc)
    except TimeoutError:
        if proc is not None:
            kill_group(proc)
        raise


def raw_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


def load_weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    out = {}
    for f in sorted(Path(folder).glob("*.safetensors")):
        out.update(load_file(f))
    assert out, f"no safetensors in {folder}"
    return out


def max_abs_diff(a: dict, b: dict) -> float:
    assert set(a) == set(b)
    return max((a[k].float() - b[k].float()).abs().max().item() for k in a)


def all_finite(weights: dict) -> bool:
    import torch

    return all(bool(torch.isfinite(v.float()).all()) for v in weights.values())


def cli(*args: str, cwd: Path, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess:
    return sga_cli(*args, cwd=cwd, timeout=timeout)


def assert_finite_number(value, name: str) -> None:
    assert isinstance(value, (int, float)) and not isinstance(value, bool), (name, value)
    assert math.isfinite(value), (name, value)


# ---------------------------------------------------------------------------- fixtures -----

@pytest.fixture(scope="module")
def normals_file(tmp_path_factory, demo_dir) -> Path:
    from sga_core.data import load_qa
    from sga_core.normals.idk import idk_normals

    path = tmp_path_factory.mktemp("normals") / "normals.jsonl"
    idk_normals(len(load_qa(demo_dir / "forget.jsonl")), 4, seed=0).save(path)
    return path


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, tiny_model_dir, demo_dir, normals_file):
    """One real 1-process SGA run (r=-0.8, K=4, batch 4, 4 steps, seed 0, length grouping),
    started with launch.run_foreground; its results are kept in memory because
    test_command_sh_reproduces re-runs the same folder."""
    root = tmp_path_factory.mktemp("baseline-runs")
    cfg = make_cfg(tiny_model_dir, demo_dir / "forget.jsonl", normals_file, probe_count=3,
                   probe_every=1, group_by_length=True)
    run_dir = create_run(cfg, root)
    echoed: list[str] = []
    status = launch.run_foreground(run_dir, echo=echoed.append, poll_s=0.2)
    return SimpleNamespace(run_dir=run_dir, cfg=load_config(run_dir / "config.yaml"),
                           status=status, echoed=echoed, metrics=runs.metrics(run_dir),
                           probes=runs.probes(run_dir),
                           weights=load_weights(run_dir / "model") if status.get("state") ==
                           "completed" else None,
                           files=set(os.listdir(run_dir)))


@pytest.fixture(scope="module")
def uneven_baseline(tmp_path_factory, tiny_model_dir, demo_dir, normals_file):
    """1 process, batch 3 (10 rows: batches 3,3,3,1), 4 steps: the reference for runs whose
    global batch does not split evenly over processes or micro-batches."""
    root = tmp_path_factory.mktemp("uneven-runs")
    cfg = make_cfg(tiny_model_dir, demo_dir / "forget.jsonl", normals_file, batch_size=3,
                   probe_every=0)
    run_dir = create_run(cfg, root)
    status = run_to_end(run_dir)
    assert status["state"] == "completed", status
    return SimpleNamespace(run_dir=run_dir, metrics=runs.metrics(run_dir),
                           weights=load_weights(run_dir / "model"))


def assert_same_trajectory(ref: list[dict], other: list[dict], tol: float = 1e-4) -> None:
    assert len(ref) == len(other)
    for a, b in zip(ref, other):
        assert a["step"] == b["step"]
        for key in ("loss", "forget_nll", "normal_nll", "grad_norm"):
            assert b[key] == pytest.approx(a[key], abs=tol), (key, a["step"], a[key], b[key])


# ------------------------------------------------------------------ 1. end to end ----------

def test_end_to_end_run_folder(baseline, tiny_model_dir, demo_dir, normals_file):
    run_dir, status = baseline.run_dir, baseline.status
    assert status["state"] == "completed", status
    assert status["exit_code"] == 0
    assert status["error"] is None
    assert status["num_processes"] == 1
    assert isinstance(status["pid"], int) and status["pid"] != os.getpid()
    assert status["total_steps"] == 4 and status["step"] == 4
    assert status["started_at"] and status["ended_at"]

    # the folder: the files of docs/spec.md#52-files, nothing half-written left behind
    assert baseline.files == RUN_FILES, baseline.files

    # config.yaml round-trips; data/ is a snapshot the config points at
    cfg = baseline.cfg
    assert cfg.model == str(tiny_model_dir) and cfg.method == "sga"
    assert {k: cfg.method_args[k] for k in ("r", "k", "convention", "adaptive")} == {
        "r": -0.8, "k": 4, "convention": "label", "adaptive": False}
    # on disk the snapshot's paths are relative to the folder, so the folder can be moved
    raw = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert raw["data"]["forget"] == "data/forget.jsonl"
    assert raw["data"]["normals"] == "data/normals.jsonl"
    # read back, they resolve to the folder's own copies, wherever it now lies
    assert Path(cfg.data.forget) == run_dir.resolve() / "data" / "forget.jsonl"
    assert Path(cfg.data.normals) == run_dir.resolve() / "data" / "normals.jsonl"
    assert (run_dir / "data" / "forget.jsonl").read_bytes() == \
        (demo_dir / "forget.jsonl").read_bytes()
    assert (run_dir / "data" / "normals.jsonl").read_bytes() == normals_file.read_bytes()

    # command.sh: executable, its last line is the exact launch command
    sh = run_dir / "command.sh"
    assert os.access(sh, os.X_OK)
    text = sh.read_text()
    assert text.startswith("#!")
    assert text.splitlines()[-1] == command_text(cfg, run_dir)
    assert "accelerate launch" in text and "-m sga_core.train --config" in text

    # metrics.jsonl: one record per step, every field of docs/spec.md#52-files, finite values
    metrics = baseline.metrics
    assert [m["step"] for m in metrics] == [1, 2, 3, 4]
    for m in metrics:
        for key in METRICS_FIELDS:
            assert key in m, key
            assert_finite_number(m[key], key)
        assert m["r"] == -0.8
        assert m["lr"] == pytest.approx(1e-3)
        assert m["tokens_per_s"] > 0 and m["grad_norm"] > 0
    assert [m["elapsed_s"] for m in metrics] == sorted(m["elapsed_s"] for m in metrics)
    assert metrics[-1]["epoch"] == pytest.approx(4 / 3, abs=1e-3)  # 10 rows, batch 4

    # the logged loss is the SGA objective of the logged NLLs: each forget sample has one
    # forget answer (c_f) and K-1 = 3 normal answers (c_n each)
    c_f, c_n = sga_coefficients(-0.8, 4)
    for m in metrics:
        expected = c_f * m["forget_nll"] + c_n * 3 * m["normal_nll"]
        assert abs(m["loss"] - expected) < 1e-5, (m, expected)
    # SGA with r < 0 pushes the forget answer down: its NLL goes up over the run
    assert metrics[-1]["forget_nll"] > metrics[0]["forget_nll"]

    # probes.jsonl: 3 probe rows at step 0, after steps 1-3, and at the end
    probes = baseline.probes
    by_step: dict[int, list[dict]] = {}
    for p in probes:
        by_step.setdefault(p["step"], []).append(p)
    assert sorted(by_step) == [0, 1, 2, 3, 4]
    ids0 = sorted(p["sample_id"] for p in by_step[0])
    assert len(ids0) == 3
    for recs in by_step.values():
        assert sorted(p["sample_id"] for p in recs) == ids0
        for p in recs:
            assert p["tokens"] and len(p["probs"]) == len(p["tokens"]) == len(p["token_ids"])
            assert all(0.0 < x <= 1.0 for x in p["probs"]), p["probs"]
    first = {p["sample_id"]: p["probs"] for p in by_step[0]}
    last = {p["sample_id"]: p["probs"] for p in by_step[4]}
    assert first != last  # the model changed between the first and the last probe

    # train.log has the trainer's progress; run_foreground echoed those lines
    log = (run_dir / "train.log").read_text()
    assert "step 4/4" in log and "run completed" in log
    assert any("step 4/4" in line for line in baseline.echoed)

    # model/: loadable with transformers, different from (and as finite as) the start
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(run_dir / "model")
    tok = AutoTokenizer.from_pretrained(run_dir / "model")
    ids = tok("Where was Lucien Marchetti born?", return_tensors="pt").input_ids
    with torch.no_grad():
        logits = model(ids).logits
    assert torch.isfinite(logits).all()
    start = load_weights(tiny_model_dir)
    assert all_finite(baseline.weights)
    assert max_abs_diff(start, baseline.weights) > 1e-4


# ----------------------------------------------------------- 2. command.sh reproduces ------

def test_command_sh_reproduces(baseline):
    assert baseline.status["state"] == "completed"
    run_dir = baseline.run_dir
    for name in ("metrics.jsonl", "probes.jsonl", "status.json"):
        (run_dir / name).unlink()
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    with open(run_dir.parent / "rerun.log", "wb") as log:
        proc = subprocess.Popen(["bash", str(run_dir / "command.sh")], cwd=ROOT, env=env,
                                stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        rc = wait_proc(proc)
    assert rc == 0, (run_dir.parent / "rerun.log").read_text()[-3000:]
    status = run_status.read_run(run_dir)
    assert status["state"] == "completed" and status["step"] == 4
    again = runs.metrics(run_dir)
    assert [m["step"] for m in again] == [1, 2, 3, 4]
    for a, b in zip(baseline.metrics, again):
        for key in ("loss", "forget_nll", "normal_nll", "grad_norm"):
            assert b[key] == pytest.approx(a[key], abs=1e-6), key
    assert len(runs.probes(run_dir)) == len(baseline.probes)
    assert max_abs_diff(baseline.weights, load_weights(run_dir / "model")) < 1e-6


# ------------------------------------------------------------------------ 3. cancel --------

def _start_long_run(tiny_model_dir, demo_dir, normals_file, runs_dir):
    cfg = make_cfg(tiny_model_dir, demo_dir / "forget.jsonl", normals_file, max_steps=2000,
                   probe_every=0, save_model=True)
    run_dir = create_run(cfg, runs_dir)
    proc = launch.start(run_dir)
    wait_for(lambda: len(runs.metrics(run_dir)) >= 1, what="the first metrics record",
             proc=proc)
    return run_dir, proc


def _assert_cancelled(run_dir: Path, proc: subprocess.Popen) -> None:
    launch.finish(run_dir, wait_proc(proc))
    status = run_status.effective_run(run_dir)
    assert status["state"] == "cancelled", status
    assert status["exit_code"] == 0
    assert "cancel" in status["error"]
    assert 1 <= status["step"] < 2000
    assert len(runs.metrics(run_dir)) == status["step"]
    weights = load_weights(run_dir / "model")
    assert all_finite(weights)
    assert (run_dir / "model" / "config.json").exists()
    assert not (run_dir / ".model.tmp").exists()


def test_cancel_file_stops_run_and_saves_model(tiny_model_dir, demo_dir, normals_file,
                                                runs_dir):
    run_dir, proc = _start_long_run(tiny_model_dir, demo_dir, normals_file, runs_dir)
    runs.request_cancel(run_dir)
    assert (run_dir / runs.CANCEL_FILE).exists()
    _assert_cancelled(run_dir, proc)


def test_sigterm_to_trainer_saves_a_checkpoint_and_stops(tiny_model_dir, demo_dir,
                                                         normals_file, runs_dir):
    """SIGTERM (a scheduler's time limit or preemption) stops the run at the next step
    boundary with a checkpoint to resume from (tests/e2e/test_resume.py resumes one)."""
    from sga_core.runs import checkpoints

    run_dir, proc = _start_long_run(tiny_model_dir, demo_dir, normals_file, runs_dir)
    pid = wait_for(lambda: run_status.read_run(run_dir).get("pid"), what="the trainer pid",
                   proc=proc)
    # a one-process run starts the trainer directly (no accelerate launcher,
    # docs/spec.md#54-how-a-run-is-started)
    assert pid == proc.pid
    os.kill(pid, signal.SIGTERM)
    launch.finish(run_dir, wait_proc(proc))
    status = run_status.effective_run(run_dir)
    step = status["step"]
    assert status["state"] == "cancelled" and 1 <= step < 2000, status
    assert status["exit_code"] == checkpoints.STOPPED_EXIT
    assert status["error"] == f"stopped: checkpoint saved at step {step}"
    assert checkpoints.latest(run_dir)[0] == step == len(runs.metrics(run_dir))
    assert not (run_dir / runs.CANCEL_FILE).exists()


def _foreground_cli_killed(tmp_models, sig: int, run_id: str) -> tuple[Path, int, int]:
    """A long foreground `python -m sga_core train` sent ``sig`` after its first step:
    (run folder, trainer pid, the CLI's exit code)."""
    tiny_model_dir, demo_dir, normals_file, runs_dir = tmp_models
    cfg = make_cfg(tiny_model_dir, demo_dir / "forget.jsonl", normals_file, max_steps=2000,
                   probe_every=0, save_model=True)
    preset = runs_dir.parent / f"{run_id}.yaml"
    preset.write_text(dump_config(cfg))
    cli = subprocess.Popen([sys.executable, "-m", "sga_core", "train", "--preset", str(preset),
                            "--runs-dir", str(runs_dir), "--run-id", run_id, "--no-eval"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    run_dir = runs_dir / run_id
    try:
        wait_for(lambda: (run_dir / "metrics.jsonl").exists() and
                 len(runs.metrics(run_dir)) >= 1, what="the first step", proc=cli)
        trainer = run_status.read_run(run_dir)["pid"]
        cli.send_signal(sig)
        code = cli.wait(timeout=120)
    finally:
        if cli.poll() is None:
            cli.kill()
    return run_dir, trainer, code


def test_sigterm_to_a_foreground_cli_run_cancels_its_trainer(tiny_model_dir, demo_dir,
                                                             normals_file, runs_dir):
    """`kill` of a foreground `python -m sga_core train` (not of its trainer) cancels the
    run like Ctrl-C: the trainer stops at a step boundary, saves, and nothing keeps
    running without its caller."""
    run_dir, trainer, code = _foreground_cli_killed(
        (tiny_model_dir, demo_dir, normals_file, runs_dir), signal.SIGTERM, "fg")
    assert code in (0, 1)
    status = run_status.effective_run(run_dir)
    assert status["state"] == "cancelled", status
    assert 1 <= status["step"] < 2000
    assert (run_dir / "model" / "config.json").exists()
    wait_for(lambda: not pid_alive(trainer), what="the trainer to be gone")


def test_sigkill_of_a_foreground_cli_run_cancels_its_trainer(tiny_model_dir, demo_dir,
                                                             normals_file, runs_dir):
    """SIGKILL gives a foreground `train` no chance to cancel its run: the trainer (its own
    session, so the kill does not reach it) notices its caller is gone at the next step,
    stops as cancelled, saves, and says why. Before, it trained on alone to the end."""
    run_dir, trainer, _ = _foreground_cli_killed(
        (tiny_model_dir, demo_dir, normals_file, runs_dir), signal.SIGKILL, "fg-kill")
    wait_for(lambda: run_status.read_run(run_dir).get("state") == "cancelled",
             what="the trainer to cancel its run")
    status = run_status.read_run(run_dir)
    assert "foreground caller" in status["error"] and 1 <= status["step"] < 2000
    wait_for(lambda: not pid_alive(trainer), what="the trainer to be gone")
    assert (run_dir / "model" / "config.json").exists()


# -------------------------------------------------------------------- 4. divergence --------

def test_diverged_on_nonfinite_weights_keeps_finite_model(tiny_model_dir, demo_dir, runs_dir):
    # GA on float16 weights with lr 1 and no clipping: AdamW's eps underflows to 0 in float16
    # and the first update turns weights into NaN/inf; the run must stop as diverged and
    # keep the finite weights from before that update
    cfg = make_cfg(tiny_model_dir, demo_dir / "forget.jsonl", method="ga", lr=1.0,
                   max_grad_norm=0.0, dtype="float16", max_steps=20, probe_every=0)
    run_dir = create_run(cfg, runs_dir)
    status = run_to_end(run_dir)
    assert status["state"] == "diverged", status
    assert "non-finite" in status["error"]
    assert status["exit_code"] == 0
    assert status["step"] < 20
    weights = load_weights(run_dir / "model")
    assert all_finite(weights)
    # every logged step was finite
    for m in runs.metrics(run_dir):
        assert math.isfinite(m["loss"]) and math.isfinite(m["grad_norm"])


def test_diverged_on_nonfinite_loss(tiny_model_dir, demo_dir, runs_dir, tmp_path):
    # finite but enormous weights: the float32 forward overflows, so the very first loss is
    # non-finite; no update may be applied, the saved model is the starting one
    from safetensors.torch import save_file

    big = tmp_path / "big-model"
    shutil.copytree(tiny_model_dir, big)
    start = {k: v * 1e20 for k, v in load_weights(big).items()}
    for f in big.glob("*.safetensors"):
        f.unlink()
    save_file(start, big / "model.safetensors", metadata={"format": "pt"})
    cfg = make_cfg(big, demo_dir / "forget.jsonl", method="ga", max_steps=3, probe_every=0)
    run_dir = create_run(cfg, runs_dir)
    status = run_to_end(run_dir)
    assert status["state"] == "diverged", status
    assert "non-finite" in status["error"]
    assert status["step"] == 0
    assert runs.metrics(run_dir) == []
    saved = load_weights(run_dir / "model")
    assert all_finite(saved)
    assert max_abs_diff(start, saved) == 0.0


def test_diverge_loss_threshold(tiny_model_dir, demo_dir, runs_dir):
    cfg = make_cfg(tiny_model_dir, demo_dir / "forget.jsonl", method="ga", lr=0.5,
                   diverge_loss=20.0, max_steps=40, probe_every=0)
    run_dir = create_run(cfg, runs_dir)
    status = run_to_end(run_dir)
    assert status["state"] == "diverged", status
    assert "diverge_loss 20" in status["error"]
    metrics = runs.metrics(run_dir)
    assert 1 <= len(metrics) == status["step"] < 40
    assert all(abs(m["loss"]) <= 20 for m in metrics)
    assert all_finite(load_weights(run_dir / "model"))


def test_diverge_loss_threshold_applies_no_update(tiny_model_dir, demo_dir, runs_dir):
    # the initial GA loss is about -6.4, so a threshold of 1 trips on the first step: the
    # update computed from that step must not be applied (the model kept is the start)
    cfg = make_cfg(tiny_model_dir, demo_dir / "forget.jsonl", method="ga", lr=0.5,
                   diverge_loss=1.0, max_steps=5, probe_every=0)
    run_dir = create_run(cfg, runs_dir)
    status = run_to_end(run_dir)
    assert status["state"] == "diverged", status
    assert "diverge_loss 1" in status["error"]
    assert status["step"] == 0
    assert max_abs_diff(load_weights(tiny_model_dir), load_weights(run_dir / "model")) == 0.0


# ----------------------------------------------------------------------- 5. failure --------

def test_missing_model_fails_with_error(tiny_model_dir, demo_dir, normals_file, runs_dir,
                                        tmp_path):
    model = tmp_path / "doomed-model"
    shutil.copytree(tiny_model_dir, model)
    cfg = make_cfg(model, demo_dir / "forget.jsonl", normals_file)
    run_dir = create_run(cfg, runs_dir)
    shutil.rmtree(model)
    status = run_to_end(run_dir)
    assert status["state"] == "failed", status
    assert status["error"] and str(model) in status["error"]
    assert status["exit_code"] not in (0, None)
    assert status["ended_at"]
    assert not (run_dir / "model").exists()
    assert list_runs(runs_dir)[0]["state"] == "failed"


def test_effective_status_dead_pid_is_failed(runs_dir):
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait(60)
    dead = runs_dir / "dead-run"
    dead.mkdir()
    run_status.write_run(dead, "running", pid=done.pid, started_at=now_iso())
    status = run_status.effective_run(dead)
    assert status["state"] == "failed"
    assert "vanished" in status["error"]
    # readers never write (docs/decisions/001-run-folder-is-the-contract.md): the file keeps what
    # its writers wrote, every reader derives the same "failed" from it
    assert run_status.read_run(dead)["state"] == "running"
    assert run_status.run_view(dead)["state"] == "failed"
    # a live process keeps its run running
    alive = runs_dir / "alive-run"
    alive.mkdir()
    run_status.write_run(alive, "running", pid=os.getpid())
    assert run_status.effective_run(alive)["state"] == "running"


# -------------------------------------------------------------------- 6. distributed -------

@pytest.mark.distributed
def test_two_processes_match_one(baseline, tiny_model_dir, demo_dir, normals_file, runs_dir):
    assert baseline.status["state"] == "completed"
    cfg = make_cfg(tiny_model_dir, demo_dir / "forget.jsonl", normals_file, probe_count=3,
                   probe_every=1, group_by_length=True,
                   launch_cfg={"num_processes": 2, "cpu": True})
    run_dir = create_run(cfg, runs_dir)
    command = (run_dir / "command.sh").read_text().splitlines()[-1]
    assert "--num_processes 2" in command and "--multi_gpu" in command
    assert "--main_process_port" in command
    status = run_to_end(run_dir)
    assert status["state"] == "completed", (status, runs.tail(run_dir / "train.log"))
    assert status["num_processes"] == 2

    # only the main process wrote: no duplicated records, no extra files
    assert len(raw_lines(run_dir / "metrics.jsonl")) == 4
    n_probe_rows = len({p["sample_id"] for p in baseline.probes})
    n_probe_points = len({p["step"] for p in baseline.probes})
    assert len(raw_lines(run_dir / "probes.jsonl")) == n_probe_rows * n_probe_points == 15
    assert set(os.listdir(run_dir)) == RUN_FILES
    log = (run_dir / "train.log").read_text()
    assert log.count("step 4/4 loss=") == 1

    # DDP over gloo with the global-mean loss scaling: the same trajectory as 1 process
    metrics = runs.metrics(run_dir)
    assert_same_trajectory(baseline.metrics, metrics)
    assert max_abs_diff(baseline.weights, load_weights(run_dir / "model")) < 1e-4
    probes = runs.probes(run_dir)
    for a, b in zip(sorted(baseline.probes, key=lambda p: (p["step"], p["sample_id"])),
                    sorted(probes, key=lambda p: (p["step"], p["sample_id"]))):
        assert a["tokens"] == b["tokens"]
        assert b["probs"] == pytest.approx(a["probs"], abs=1e-4)


@pytest.mark.distributed
def test_uneven_global_batch_over_two_processes(uneven_baseline, tiny_model_dir, demo_dir,
                                                normals_file, runs_dir):
    cfg = make_cfg(tiny_model_dir, demo_dir / "forget.jsonl", normals_file, batch_size=3,
                   probe_every=0, launch_cfg={"num_processes": 2, "cpu": True})
    run_dir = create_run(cfg, runs_dir)
    status = run_to_end(run_dir)
    assert status["state"] == "completed", (status, runs.tail(run_dir / "train.log"))
    assert status["num_processes"] == 2
    assert len(raw_lines(run_dir / "metrics.jsonl")) == 4
    assert_same_trajectory(uneven_baseline.metrics, runs.metrics(run_dir))
    assert max_abs_diff(uneven_baseline.weights, load_weights(run_dir / "model")) < 1e-4


def test_gradient_accumulation_matches_one_batch(uneven_baseline, tiny_model_dir, demo_dir,
                                                 normals_file, runs_dir):
    # batch 3 in 2 micro-batches (1 + 2 rows; the last batch of the epoch, 1 row, gives an
    # empty micro-batch): every step must still make exactly one optimizer update with the
    # gradient of the global mean
    cfg = make_cfg(tiny_model_dir, demo_dir / "forget.jsonl", normals_file, batch_size=3,
                   grad_accum=2, probe_every=0)
    run_dir = create_run(cfg, runs_dir)
    status = run_to_end(run_dir)
    assert status["state"] == "completed", (status, runs.tail(run_dir / "train.log"))
    metrics = runs.metrics(run_dir)
    assert all(m["grad_norm"] is not None for m in metrics)
    assert_same_trajectory(uneven_baseline.metrics, metrics)
    assert max_abs_diff(uneven_baseline.weights, load_weights(run_dir / "model")) < 1e-4


# ---------------------------------------------------------------------------- 7. CLI -------

def test_cli_train_creates_completed_run(tiny_model_dir, demo_dir, runs_dir, tmp_path):
    forget = demo_dir / "forget.jsonl"
    res = cli("train", "--model", str(tiny_model_dir), "--forget", str(forget), "--r", "-0.8",
              "--k", "4", "--max-steps", "2", "--runs-dir", str(runs_dir), "--no-eval",
              cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "state: completed" in res.stdout
    (run_dir,) = [d for d in runs_dir.iterdir()]
    assert run_dir.name.startswith("sga-r-0p8-k4-")
    status = run_status.read_run(run_dir)
    assert status["state"] == "completed" and status["exit_code"] == 0 and status["step"] == 2
    assert len(runs.metrics(run_dir)) == 2
    cfg = load_config(run_dir / "config.yaml")
    assert cfg.method == "sga" and cfg.method_args["r"] == -0.8 and cfg.method_args["k"] == 4
    # IDK normals were generated and snapshotted into the run: K-1 = 3 per forget row
    normals = [json.loads(line) for line in raw_lines(run_dir / "data" / "normals.jsonl")]
    assert len(normals) == 10 * 3
    assert {n["source"] for n in normals} == {"idk"}
    assert f"command:    {command_text(cfg, run_dir)}" in res.stdout


def test_cli_no_launch_list_show_cancel(tiny_model_dir, demo_dir, runs_dir, tmp_path):
    res = cli("train", "--model", str(tiny_model_dir), "--forget",
              str(demo_dir / "forget.jsonl"), "--run-id", "queued-one", "--no-launch",
              "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    run_dir = runs_dir / "queued-one"
    assert run_status.read_run(run_dir)["state"] == "queued"
    assert not (run_dir / "metrics.jsonl").exists() and not (run_dir / "train.log").exists()
    assert (run_dir / "data" / "normals.jsonl").exists()

    res = cli("runs", "list", "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert res.returncode == 0
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("queued-one"))
    assert "queued" in line.split()[1] and "sga" in line

    res = cli("runs", "show", "queued-one", "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert res.returncode == 0 and json.loads(res.stdout)["state"] == "queued"

    res = cli("runs", "cancel", "queued-one", "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert res.returncode == 0
    assert (run_dir / runs.CANCEL_FILE).exists()

    res = cli("runs", "cancel", "no-such-run", "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert res.returncode == 2 and "no-such-run" in res.stderr


@pytest.mark.parametrize("method", ["sga", "ga"])
def test_cli_malformed_forget_file_leaves_no_run(method, tiny_model_dir, demo_dir, runs_dir,
                                                 tmp_path):
    rows = [json.loads(line) for line in raw_lines(demo_dir / "forget.jsonl")[:3]]
    del rows[1]["answer"]
    bad = tmp_path / "broken-forget.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = cli("train", "--model", str(tiny_model_dir), "--forget", str(bad), "--method", method,
              "--max-steps", "2", "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "broken-forget.jsonl" in res.stderr
    assert "row 2" in res.stderr and "answer" in res.stderr
    assert list(runs_dir.iterdir()) == []  # no run folder, no hidden .creating-* folder


def test_cli_rejects_setting_of_other_method(tiny_model_dir, demo_dir, runs_dir, tmp_path):
    res = cli("train", "--model", str(tiny_model_dir), "--forget",
              str(demo_dir / "forget.jsonl"), "--method", "ga", "--r", "0.3",
              "--runs-dir", str(runs_dir), cwd=tmp_path)
    assert res.returncode == 2
    assert "--r" in res.stderr and "'ga'" in res.stderr
    assert list(runs_dir.iterdir()) == []
