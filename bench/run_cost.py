"""Benchmark: the fixed cost of one run (docs/decisions/002-in-process-evaluation.md): process
starts, imports, model loads, saving, everything but the training steps and the evaluation's own
compute.

    python bench/run_cost.py                        # the tiny model, 3 runs per variant
    python bench/run_cost.py --model smollm2 --repeats 2
    python bench/run_cost.py --code /path/to/an/older/checkout   # the same, older code

Each run is the CLI a researcher types, timed from outside:
``python -m sga_core train --method ga --max-steps 1 ...`` on the demo data (batch 4, no
probes, no NLL before/after), evaluated when it completes (demo forget, 40 retain rows,
real_authors, world_facts; 8 new tokens per answer, so generation is small). Variants:

- ``in-process``: the default (docs/decisions/002-in-process-evaluation.md): the trainer
  evaluates the model it holds;
- ``separate``: ``eval.in_process: false``: a second process loads the model and evaluates
  (the older flow; with ``--code`` pointing at older code this is what it runs).

Per run: the wall time, the training steps (metrics.jsonl ``elapsed_s`` of the last step),
the evaluation's compute (its summary's scoring, generation and token timings) and the rest,
the **fixed cost** = wall - steps - evaluation compute. Medians over ``--repeats``, variants
interleaved. The last line is ``fixed_in_process_s=<x> fixed_separate_s=<y>``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "assets" / "demo"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="tiny", help="'tiny' (built into a temp folder), "
                                                   "'smollm2' (embedded), or a folder")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--code", default=str(ROOT), help="the checkout whose sga_core runs")
    p.add_argument("--variants", default="in-process,separate")
    return p.parse_args(argv)


def run_once(code: Path, model: str, runs: Path, variant: str, tag: str) -> dict:
    sys.path.insert(0, str(ROOT))  # the run folder's names, from this checkout
    from sga_core.runs.folder import RunFolder

    preset = runs / f"preset-{tag}.yaml"
    text = "eval:\n  max_new_tokens: 8\n"
    knows = "in_process: bool" in (code / "sga_core" / "config.py").read_text()
    if variant == "separate" and knows:  # older code has only the separate evaluation
        text += "  in_process: false\n"
    preset.write_text(text)
    argv = [sys.executable, "-m", "sga_core", "train", "--model", model, "--method", "ga",
            "--forget", str(DEMO / "forget.jsonl"), "--retain", str(DEMO / "retain.jsonl"),
            "--max-steps", "1", "--batch-size", "4", "--probe-count", "0", "--no-eval-nll",
            "--eval", "--eval-set", f"real_authors={DEMO / 'real_authors.jsonl'}",
            "--eval-set", f"world_facts={DEMO / 'world_facts.jsonl'}",
            "--runs-dir", str(runs), "--run-id", tag, "--preset", str(preset)]
    env = {**os.environ, "PYTHONPATH": str(code)}
    t0 = time.perf_counter()
    out = subprocess.run(argv, cwd=code, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    run_dir = runs / tag
    if out.returncode != 0:
        raise SystemExit(f"{tag}: exit {out.returncode}\n{out.stdout[-2000:]}\n"
                         f"{out.stderr[-2000:]}")
    run = RunFolder(run_dir)
    metrics = [json.loads(x) for x in run.metrics_path.read_text().splitlines()]
    summary = json.loads(run.summary_path.read_text())
    t = summary.get("timings", {})
    eval_compute = sum(t.get(k, 0.0) for k in ("scoring_s", "generation_s", "tokens_s"))
    steps = metrics[-1]["elapsed_s"]
    return {"wall": wall, "steps": steps, "eval_compute": eval_compute,
            "eval_load": t.get("load_s", 0.0), "fixed": wall - steps - eval_compute,
            "in_process": summary.get("in_process", False)}


def main(argv=None) -> int:
    args = parse_args(argv)
    code = Path(args.code).resolve()
    variants = [v for v in args.variants.split(",") if v]
    with tempfile.TemporaryDirectory(prefix="bench-runcost-") as tmp:
        tmp = Path(tmp)
        model = args.model
        if model == "tiny":
            sys.path.insert(0, str(ROOT))
            from sga_core.model.tiny import build_tiny_model

            model = str(build_tiny_model(tmp / "tiny"))
        elif model == "smollm2":
            model = "embedded:smollm2"
        runs = tmp / "runs"
        runs.mkdir()
        results: dict[str, list[dict]] = {v: [] for v in variants}
        print(f"code: {code}  model: {args.model}  repeats: {args.repeats}  "
              f"cores: {os.cpu_count()}  load: {os.getloadavg()[0]:.1f}", flush=True)
        for i in range(args.repeats):
            order = variants if i % 2 == 0 else variants[::-1]
            for v in order:
                r = run_once(code, model, runs, v, f"{v}-{i}")
                results[v].append(r)
                print(f"  {v:10s} run {i}: wall {r['wall']:6.1f}s  steps {r['steps']:5.2f}s  "
                      f"eval compute {r['eval_compute']:5.1f}s  eval model load "
                      f"{r['eval_load']:4.1f}s  fixed {r['fixed']:6.1f}s  "
                      f"(evaluated in process: {r['in_process']})", flush=True)
    med = {v: {k: statistics.median(r[k] for r in rs) for k in ("wall", "steps",
                                                                   "eval_compute", "fixed")}
           for v, rs in results.items()}
    print()
    print(f"{'variant':12s} {'wall':>8s} {'steps':>8s} {'eval':>8s} {'fixed':>8s}  (median s)")
    for v, m in med.items():
        print(f"{v:12s} {m['wall']:8.1f} {m['steps']:8.2f} {m['eval_compute']:8.1f} "
              f"{m['fixed']:8.1f}")
    if os.getloadavg()[0] > (os.cpu_count() or 1):
        print(f"note: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: other "
              "processes share the CPU, so times are inflated")
    print(" ".join(f"fixed_{v.replace('-', '_')}_s={m['fixed']:.1f}" for v, m in med.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
