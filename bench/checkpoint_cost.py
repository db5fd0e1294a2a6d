"""Benchmark: the cost of a checkpoint (docs/long-runs.md), and the resume identity check.

    python bench/checkpoint_cost.py                       # SmolLM2, full and LoRA, + identity
    python bench/checkpoint_cost.py --model tiny          # smoke mode, timings mean nothing
    python bench/checkpoint_cost.py --skip-identity --steps 4

**Cost.** For each mode (full fine-tuning, LoRA rank 8) one real run through the CLI a
researcher types (``python -m sga_core train --method ga --save-every 1 ...``, the demo data,
batch 4, CPU): every step but the last saves a checkpoint. Seconds per save are the train
log's "checkpoint saved at step k (X s)" (the safetensors and JSON files, and the swap into
place); seconds per step come from metrics.jsonl (tokens / tokens_per_s: the step alone).
A 100-step run at ``save_every 25`` saves 3 times (steps 25, 50, 75; none at the last
step, where the run ends and saves its model anyway), so its share is
``3 save / (100 step + 3 save)``: an extrapolation from the few steps measured, not a
100-step run.

**Identity.** The tiny random model (20 steps, batch 4, seed 7, SGA with IDK normals and
NPO with a reference model): run uninterrupted; run again with ``save_every 10``, the trainer
killed (SIGKILL) once the step-10 checkpoint exists, resumed with ``train --resume``. The
max |difference| of the per-step losses and of the final weights.

Last line: ``save_full_s=<x> save_lora_s=<y> share_full_25=<p> share_lora_25=<q>
loss_diff=<d> weight_diff=<w>``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEMO = ROOT / "assets" / "demo"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
SAVED = re.compile(r"checkpoint saved at step (\d+) \(([\d.]+)s\)")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="embedded:smollm2",
                   help="a model spec, or 'tiny' (built into a temp folder)")
    p.add_argument("--steps", type=int, default=4, help="steps per cost run (saves: steps-1)")
    p.add_argument("--skip-identity", action="store_true")
    p.add_argument("--skip-cost", action="store_true")
    return p.parse_args(argv)


def cli(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sga_core", *args], env=ENV, text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def tiny_model(tmp: Path) -> str:
    from sga_core.model.tiny import build_tiny_model

    return str(build_tiny_model(tmp / "tiny"))


def cost(model: str, runs: Path, mode: str, steps: int) -> dict:
    run_id = f"cost-{mode}"
    extra = ["--lora-rank", "8"] if mode == "lora" else []
    out = cli("train", "--model", model, "--method", "ga", "--run-id", run_id,
              "--forget", str(DEMO / "forget.jsonl"), "--retain", str(DEMO / "retain.jsonl"),
              "--max-steps", str(steps), "--batch-size", "4", "--save-every", "1",
              "--keep-checkpoints", "1", "--probe-every", "0", "--probe-count", "0",
              "--no-eval-nll", "--no-eval", "--device", "cpu", "--runs-dir", str(runs), *extra)
    run_dir = runs / run_id
    if out.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    from sga_core.runs.folder import RunFolder

    run = RunFolder(run_dir)
    log = run.train_log_path.read_text()
    saves = {int(k): float(v) for k, v in SAVED.findall(log)}
    elapsed = [json.loads(x)["elapsed_s"] for x in
               run.metrics_path.read_text().splitlines() if x]
    # elapsed_s is taken after a step, before its save: the gap to the next one is that
    # save plus the next step
    step_s = [elapsed[k] - elapsed[k - 1] - saves.get(k, 0.0) for k in range(1, len(elapsed))]
    size = sum(f.stat().st_size for f in run.checkpoints_dir.rglob("*") if f.is_file())
    return {"save_s": statistics.median(saves.values()), "saves": list(saves.values()),
            "step_s": statistics.median(step_s), "size_mb": size / 2**20}


def identity(model: str, runs: Path, method: str) -> tuple[float, float]:
    from safetensors.torch import load_file

    from sga_core.data import load_qa
    from sga_core.normals.idk import idk_normals

    normals = runs / "normals.jsonl"
    if not normals.exists():
        idk_normals(len(load_qa(DEMO / "forget.jsonl")), 4, seed=3).save(normals)
    data = (["--normals", str(normals), "--r", "-0.8", "--k", "4"] if method == "sga" else
            ["--retain", str(DEMO / "retain.jsonl"), "--retain-weight", "1"])
    common = ["--model", model, "--method", method, "--forget", str(DEMO / "forget.jsonl"),
              *data, "--max-steps", "20", "--batch-size", "4", "--lr", "1e-3", "--seed", "7",
              "--no-eval-nll", "--no-eval", "--device", "cpu", "--runs-dir", str(runs)]
    whole, cut = f"whole-{method}", f"cut-{method}"
    out = cli("train", *common, "--run-id", whole)
    assert out.returncode == 0, out.stderr[-3000:]
    out = cli("train", *common, "--run-id", cut, "--save-every", "10", "--no-launch")
    assert out.returncode == 0, out.stderr[-3000:]
    from sga_core.runs import checkpoints, launch
    from sga_core.runs import status as run_status
    from sga_core.runs.folder import RunFolder

    run_dir = runs / cut
    proc = launch.start(run_dir)
    while checkpoints.latest(run_dir) is None:
        if proc.poll() is not None:
            raise SystemExit(f"{cut} ended before its checkpoint")
        time.sleep(0.02)
    os.kill(run_status.read_run(run_dir)["pid"], signal.SIGKILL)
    launch.finish(run_dir, proc.wait())
    out = cli("train", "--resume", cut, "--runs-dir", str(runs))
    assert out.returncode == 0, out.stderr[-3000:]

    def losses(d):
        lines = RunFolder(runs / d).metrics_path.read_text().splitlines()
        return [json.loads(x)["loss"] for x in lines if x]

    a, b = losses(whole), losses(cut)
    assert len(a) == len(b) == 20, (len(a), len(b))
    wa = load_file(str(RunFolder(runs / whole).model_dir / "model.safetensors"))
    wb = load_file(str(RunFolder(runs / cut).model_dir / "model.safetensors"))
    loss_diff = max(abs(x - y) for x, y in zip(a, b))
    weight_diff = max(float((wa[k].double() - wb[k].double()).abs().max()) for k in wa)
    return loss_diff, weight_diff


def main(argv=None) -> int:
    args = parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory(prefix="sga-bench-ckpt-") as tmp:
        tmp = Path(tmp)
        model = tiny_model(tmp) if args.model == "tiny" else args.model
        if not args.skip_cost:
            print(f"checkpoint cost: {args.model}, CPU, {args.steps} steps, a save after "
                  f"each but the last", flush=True)
            print(f"{'mode':6} {'save s':>8} {'step s':>8} {'MB':>8} {'share@25':>9}")
            for mode in ("full", "lora"):
                c = cost(model, tmp / "runs", mode, args.steps)
                share = 3 * c["save_s"] / (100 * c["step_s"] + 3 * c["save_s"])
                results[f"save_{mode}_s"] = round(c["save_s"], 3)
                results[f"share_{mode}_25"] = round(share, 4)
                print(f"{mode:6} {c['save_s']:8.2f} {c['step_s']:8.2f} {c['size_mb']:8.1f} "
                      f"{share:9.1%}   saves {', '.join(f'{s:.2f}' for s in c['saves'])}",
                      flush=True)
        if not args.skip_identity:
            tiny = tiny_model(tmp) if args.model != "tiny" else model
            diffs = [identity(tiny, tmp / "identity", m) for m in ("sga", "npo")]
            for m, (dl, dw) in zip(("sga", "npo"), diffs):
                print(f"identity {m}: max |loss diff| {dl:.3g}, max |weight diff| {dw:.3g}")
            results["loss_diff"] = max(d[0] for d in diffs)
            results["weight_diff"] = max(d[1] for d in diffs)
    print(" ".join(f"{k}={v}" for k, v in results.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
