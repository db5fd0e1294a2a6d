"""The gradient norm the trainer logs (metrics.jsonl ``grad_norm``) is the norm of the whole
model's gradient for the step, whatever shards it: with ``max_grad_norm: 0`` (no clipping)
under DDP and FSDP it equals the norm one process computes for the same batch, and with no
``.grad`` on any parameter (DeepSpeed ZeRO keeps gradients in its engine) the update
reports a finite norm instead of raising.

What runs here, on the CPU with gloo: a real 2-process ``accelerate launch`` run (DDP, what
accelerate gives a CPU), and the trainer's update step on a model wrapped in torch's FSDP over
2 processes (tests/helpers/grad_norm_worker.py says why accelerate's own FSDP launch cannot be used
on a CPU). DeepSpeed is not installed, so its branch (the engine's ``get_global_grad_norm()``)
is not run."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sga_core.config import TrainConfig
from sga_core.runs import folder as runs
from sga_core.runs import launch
from sga_core.runs import status as run_status
from sga_core.runs.create import create_run
from sga_core.runs.folder import free_port

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parents[1] / "helpers" / "grad_norm_worker.py"
TIMEOUT = 300.0  # generous: the 2-core machine is shared


def _env() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _worker(*args: str, processes: int = 1, cwd: Path) -> subprocess.CompletedProcess:
    argv = [sys.executable]
    if processes > 1:
        argv += ["-m", "torch.distributed.run", "--nproc_per_node", str(processes),
                 "--master_addr", "127.0.0.1", "--master_port", str(free_port())]
    proc = subprocess.run(argv + [str(WORKER), *args], cwd=cwd, env=_env(), text=True,
                          capture_output=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


@pytest.mark.slow
@pytest.mark.distributed
def test_fsdp_update_reports_the_whole_model_norm(tiny_model_dir, tmp_path):
    out = tmp_path / "fsdp.json"
    _worker("fsdp", str(tiny_model_dir), str(out), processes=2, cwd=tmp_path)
    res = json.loads(out.read_text())
    print(f"FSDP 2 ranks: whole-model norm {res['full']:.6f}, update returned "
          f"{res['update']}, params with a local grad {res['local_params_with_grad']}")
    assert "error" not in res["update"], res
    # the norm of the whole sharded gradient, not of this rank's shard
    assert res["update"]["value"] == pytest.approx(res["full"], rel=1e-4), res
    # no gradient at all: a finite number (0), never an exception
    assert "error" not in res["no_grad_update"], res
    value = res["no_grad_update"]["value"]
    assert value is None or math.isfinite(value), res


@pytest.mark.slow
def test_update_without_any_grad_reports_a_finite_norm(tiny_model_dir, demo_dir, tmp_path):
    out = tmp_path / "nograd.json"
    _worker("nograd", str(tiny_model_dir), str(demo_dir / "forget.jsonl"), str(out),
            cwd=tmp_path)
    res = json.loads(out.read_text())["update"]
    assert "error" not in res, res
    assert res["value"] == 0.0, res


def _ga_cfg(model: Path, forget: Path, launch_cfg: dict) -> TrainConfig:
    return TrainConfig.from_dict({
        "run_id": "", "model": str(model), "method": "ga", "method_args": {},
        "data": {"forget": str(forget)},
        "training": {"batch_size": 4, "max_steps": 3, "lr": 1e-3, "seed": 0,
                     "max_grad_norm": 0.0, "probe_every": 0, "eval_nll": False},
        "launch": launch_cfg, "eval": {"enabled": False}})


def _run(cfg: TrainConfig, root: Path) -> list[dict]:
    run_dir = create_run(cfg, root)
    proc = launch.start(run_dir)
    try:
        code = proc.wait(TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        raise
    launch.finish(run_dir, code)
    status = run_status.effective_run(run_dir)
    assert status["state"] == "completed", (status, runs.tail(run_dir / "train.log"))
    return runs.metrics(run_dir)


@pytest.mark.slow
@pytest.mark.distributed
def test_two_process_run_logs_the_single_process_norm(tiny_model_dir, demo_dir, runs_dir):
    forget = demo_dir / "forget.jsonl"
    one = _run(_ga_cfg(tiny_model_dir, forget, {"device": "cpu"}), runs_dir)
    two = _run(_ga_cfg(tiny_model_dir, forget, {"device": "cpu", "num_processes": 2}),
               runs_dir)
    print("grad_norm 1 process:", [m["grad_norm"] for m in one],
          "2 processes:", [m["grad_norm"] for m in two])
    assert [m["step"] for m in two] == [m["step"] for m in one] == [1, 2, 3]
    for a, b in zip(one, two):
        assert a["grad_norm"] is not None and a["grad_norm"] > 0, a
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-4), (a, b)
