"""The local queue starts a run only when it fits in the memory left, and says why it does
not; a run the kernel killed says out of memory, with what it needed, not a bare signal
(docs/large-models.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sga_core.config import TrainConfig
from sga_core.runs import launch, memory
from sga_core.runs.create import create_run
from sga_core.runs.runner import Runner
from sga_core.runs.status import read_run, write_run


def text_run(root: Path, model: Path, demo: Path, batch: int, max_length: int) -> Path:
    cfg = TrainConfig(model=str(model), method="ga")
    cfg.data.task = "text"
    cfg.data.forget = str(demo / "text_forget.jsonl")
    cfg.training.batch_size, cfg.training.max_length = batch, max_length
    cfg.eval.enabled = False
    return create_run(cfg, root, mode="queue")


def test_a_run_that_cannot_fit_is_failed_with_the_reason_not_started(tmp_path,
                                                                     tiny_model_dir, demo_dir):
    root = tmp_path / "runs"
    huge = text_run(root, tiny_model_dir, demo_dir, batch=4096, max_length=131072)
    need = memory.run_need(huge)
    total, _ = memory.machine_bytes()
    assert need is not None and total is not None and need > total
    runner = Runner(root, max_parallel=2)
    runner.start_queued()
    assert not runner.active  # nothing was started for the kernel to kill
    st = read_run(huge)
    assert st["state"] == "failed"
    assert "not started: it needs about" in st["error"] and "GB" in st["error"]
    assert "this machine has" in st["error"] and "training.batch_size" in st["error"]


def test_a_run_that_fits_is_admitted_and_its_need_grows_with_the_batch(tmp_path,
                                                                       tiny_model_dir,
                                                                       demo_dir):
    root = tmp_path / "runs"
    small = text_run(root, tiny_model_dir, demo_dir, batch=2, max_length=64)
    bigger = text_run(root, tiny_model_dir, demo_dir, batch=16, max_length=512)
    assert memory.admission(small, others_running=0) is None
    assert memory.run_need(bigger) > memory.run_need(small)


def test_smollm2_text_at_1024_tokens_batch_4_k_4_is_estimated_as_the_trainer_runs_it():
    """The estimate mirrors the trainer: a micro-batch of 16 x 1,024 tokens trains with
    gradient checkpointing and the bounded loss (bench/text_memory.py measures it)."""
    dims = {"vocab": 49152, "hidden": 576, "layers": 30, "intermediate": 1536, "kv": 192,
            "tied": True}  # SmolLM2-135M's config.json
    cfg = TrainConfig(model="embedded:smollm2", method="sga", method_args={"k": 4})
    cfg.data.task = "text"
    cfg.training.batch_size, cfg.training.max_length = 4, 1024
    assert memory.checkpointing(cfg)
    bounded = memory.training_bytes(cfg, dims)
    assert bounded < 6 * memory.GB
    cfg.training.fused_loss = "off"  # every scored token's logits, three times over
    assert memory.training_bytes(cfg, dims) - bounded > 8 * memory.GB


def test_a_run_killed_by_the_kernel_says_out_of_memory_with_what_it_needed(
        tmp_path, tiny_model_dir, demo_dir):
    root = tmp_path / "runs"
    run = text_run(root, tiny_model_dir, demo_dir, batch=8, max_length=256)
    write_run(run, "running")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    proc.kill()  # what the kernel's OOM killer sends
    proc.wait()
    assert proc.returncode == -9
    st = launch.finish(run, proc.returncode)
    assert st["state"] == "failed"
    err = st["error"]
    assert "out of memory: the run needed about" in err and " GB" in err
    assert "killed by signal 9 before" not in err


def test_other_signals_and_exits_are_named():
    assert memory.exit_cause(2) == "exited with code 2"
    assert "SIGTERM" in memory.exit_cause(-15)
    assert "out of memory" in memory.exit_cause(-9)
