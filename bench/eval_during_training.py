"""Benchmark (docs/spec.md#56-evaluation-during-training): the cost of evaluation during training on
the demo, and the slowdown of a run evaluated every N steps (default 5) against the same run without
it.

    python bench/eval_during_training.py                 # the prepared demo original (SmolLM2)
    python bench/eval_during_training.py --model tiny    # smoke test, seconds

Both runs use assets/presets/demo-sga.yaml (r = -0.8, 25 steps, batch 2) and the same seed,
so they train identically (the evaluations change nothing, a test pins it); the pair is run
``--repeats`` times in alternating order (A,B then B,A) because the machine may be shared,
and medians are reported. The evaluated subset is the default: every forget row (10), 10
retain rows, greedy ROUGE-L on 4 + 4 rows, FQ from the retain reference's cached truth
ratios (runs/demo-retain-ref must have been evaluated: ``prepare --demo`` does it).

It prints the training time (status.json ``elapsed_s``: after the model is loaded) of each
run, the evaluations' own times (``eval_s`` in eval_steps.jsonl) and what they found. The
last line: ``eval_cost_s=<median s per evaluation> slowdown_every<N>=<ratio>``.

``--quick`` (a minute or two): no runs; in one process, the trainer set up on the demo
(``Trainer.setup``), one evaluation (``StepEval.measure``) and one training step timed in
alternation ``--repeats`` times (default 3), so a busy machine slows both alike. Last line:
``eval_s=<median> step_s=<median> eval_vs_step=<ratio>`` (an evaluation costs that many
training steps; every N steps adds about ratio/N to a run's time).
"""

from __future__ import annotations

import argparse
import statistics
import sys

from demo_runs import Demo


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="model to unlearn (default: the prepared "
                   "demo original); 'tiny' = random tiny models in a temp folder (smoke)")
    p.add_argument("--eval-every", type=int, default=5)
    p.add_argument("--r", type=float, default=-0.8)
    p.add_argument("--max-steps", type=int, default=0, help="override the preset's 25 steps")
    p.add_argument("--repeats", type=int, default=None,
                   help="pairs of runs (default 1); with --quick, timings (default 3)")
    p.add_argument("--quick", action="store_true",
                   help="time one evaluation against one training step, in process")
    p.add_argument("--runs-dir", default=None)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from sga_core.fileio import read_jsonl
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.status import read_run

    demo = Demo(args.model, args.runs_dir)
    if args.quick:
        return quick(demo, args)
    base = {"max_steps": args.max_steps} if args.max_steps else {}
    times: dict[int, list[float]] = {0: [], args.eval_every: []}
    costs: list[float] = []
    last_recs: list[dict] = []
    for rep in range(args.repeats or 1):
        order = [0, args.eval_every] if rep % 2 == 0 else [args.eval_every, 0]
        for every in order:
            cfg = demo.config(r=args.r, training={**base, "eval_every": every},
                              evaluate=False)
            run_dir, st = demo.run(cfg)
            if st.get("state") != "completed":
                print(f"run {run_dir.name}: {st.get('state')} {st.get('error')}")
                return 1
            elapsed = read_run(run_dir)["elapsed_s"]
            times[every].append(elapsed)
            print(f"eval_every={every}: {run_dir.name} trained in {elapsed:.1f}s", flush=True)
            if every:
                last_recs = read_jsonl(RunFolder(run_dir).eval_steps_path)
                costs += [r["eval_s"] for r in last_recs]
    print("\nstep | eval_s | FQ | forget prob | forget TR | retain prob | retain TR | "
          "forget ROUGE | retain ROUGE | best")
    keys = ("forget_quality", "forget_probability", "forget_truth_ratio", "retain_probability",
            "retain_truth_ratio", "forget_rouge", "retain_rouge")
    # each record's "best" says best so far when it was written: the run's best is the last
    best = max((r["step"] for r in last_recs if r.get("best")), default=None)
    for r in last_recs:
        print(f"{r['step']:4d} | {r['eval_s']:6.2f} | " + " | ".join(
            "-" if r.get(k) is None else f"{r[k]:.4g}" for k in keys)
            + (" | *" if r["step"] == best else " |"))
    why = {k: v for k, v in (last_recs[-1].get("reasons") or {}).items() if v} \
        if last_recs else {}
    if why:
        print("not measured:", why)
    plain, evald = statistics.median(times[0]), statistics.median(times[args.eval_every])
    cost = statistics.median(costs) if costs else 0.0
    n_evals = len(last_recs)
    print(f"\ntraining without evaluations: {plain:.1f}s (median of {len(times[0])}); with "
          f"one every {args.eval_every} steps ({n_evals} evaluations, steps 0 and last "
          f"included): {evald:.1f}s; {cost:.2f}s per evaluation (median); slowdown "
          f"x{evald / plain:.2f}")
    print(f"eval_cost_s={cost:.3f} slowdown_every{args.eval_every}={evald / plain:.3f}")
    return 0


def quick(demo: Demo, args) -> int:
    """One evaluation against one training step, timed in alternation in one process."""
    import tempfile
    import time
    from pathlib import Path

    from sga_core.train.batches import make_batches
    from sga_core.train.trainer import Trainer

    cfg = demo.config(r=args.r, training={"eval_every": args.eval_every, "probe_count": 0},
                      evaluate=False)
    with tempfile.TemporaryDirectory() as tmp:
        tr = Trainer(cfg, Path(tmp))
        tr.setup()
        batches = make_batches(tr.units, cfg.training.batch_size, cfg.training.seed, 0)
        evals, steps = [], []
        for i in range(args.repeats or 3):
            t0 = time.time()
            tr.train_step(batches[i % len(batches)])
            steps.append(time.time() - t0)
            t0 = time.time()
            out = tr.step_eval.measure()
            evals.append(time.time() - t0)
            tr.model.train()
            print(f"step {steps[-1]:.2f}s  evaluation {evals[-1]:.2f}s", flush=True)
    why = {k: v for k, v in out["reasons"].items() if v}
    if why:
        print("not measured:", why)
    e, s = statistics.median(evals), statistics.median(steps)
    print(f"one evaluation ({len(tr.step_eval.forget_idx)} forget, "
          f"{len(tr.step_eval.retain_idx)} retain rows, ROUGE on {tr.step_eval.rouge_n}) = "
          f"{e / s:.1f} training steps; every {args.eval_every} steps adds about "
          f"{e / s / args.eval_every:.0%} to the training time")
    print(f"eval_s={e:.3f} step_s={s:.3f} eval_vs_step={e / s:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
