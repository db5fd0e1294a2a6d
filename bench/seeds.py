"""Benchmark (docs/spec.md#57-seeds-and-groups): a sweep over r repeated over seeds on the demo,
reported as the Results page shows it (per r: mean, 95% t-interval over seeds, sd, n), with every
pairwise difference between r values (paired by seed) and whether it is larger than its interval.

    python -m sga_core prepare --demo           # once: runs/demo-original, demo-retain-ref
    python bench/seeds.py                       # r in {0, -0.8, 0.4} x 3 seeds: 9 runs
    python bench/seeds.py --model tiny --max-steps 3 --seeds 2   # smoke test, ~2 minutes

Each run uses assets/presets/demo-sga.yaml (25 steps, K = 4, "I don't know" normals) and is
evaluated like any run (FQ against runs/demo-retain-ref). Runs land in ./runs and the demo
project, so the Results page shows the same sweep afterwards. One SmolLM2 run takes about 4
minutes with its evaluation on a quiet 2-core CPU: about 40 minutes for 9 runs (86 measured
with other jobs sharing the cores).

``--report SWEEP`` only prints the report of a sweep already run. The last line is
machine-readable: ``runs=<n> seeds=<k> r_values=<m> clear_differences=<c>/<pairs>``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time

from demo_runs import ROOT, Demo

METRICS = ("FQ", "MU", "forget ROUGE-L", "retain ROUGE-L", "forget prob", "retain prob")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="model to unlearn (default: the prepared "
                   "demo original); 'tiny' = random tiny models in a temp folder (smoke)")
    p.add_argument("--r", default="0,-0.8,0.4", help="r values (default 0,-0.8,0.4)")
    p.add_argument("--seeds", default="3", help="a count or a list (default 3: 0, 1, 2)")
    p.add_argument("--max-steps", type=int, default=0, help="override the preset's 25 steps")
    p.add_argument("--runs-dir", default=None)
    p.add_argument("--report", metavar="SWEEP", help="only report an existing sweep")
    return p.parse_args(argv)


def report(demo: Demo, sweep: str) -> dict:
    from sga_core.report import seeds, sweeps
    from sga_core.report.stats import compare_by_seed
    from sga_core.report.table import results_table

    rows = [r for r in results_table(demo.project, demo.root) if r.get("sweep") == sweep]
    groups = sorted(seeds.groups(rows), key=lambda g: g["r"])
    cols = [c for c in METRICS if any(g.get(c) and g[c].mean is not None for g in groups)]
    print(f"\nsweep {sweep}: {len(rows)} evaluated runs\n")
    print("| r | n | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for g in groups:
        print(f"| {g['r']:g} | {g['n']} | " + " | ".join(
            seeds.fmt_interval(g[c]) or "-" for c in cols) + " |")
    print("\ncells: mean [95% t-interval over seeds] sd\n")
    print("differences between r values, paired by seed (95% t-interval):")
    clear, pairs, out = 0, 0, {"table": [], "differences": []}
    for a, b in itertools.combinations(groups, 2):
        for c in cols:
            va = {m["seed"]: m[c] for m in a["runs"] if m.get(c) is not None}
            vb = {m["seed"]: m[c] for m in b["runs"] if m.get(c) is not None}
            iv = compare_by_seed(va, vb)
            if iv.mean is None:
                continue
            pairs += 1
            clear += iv.excludes(0.0)
            verdict = "LARGER than its interval" if iv.excludes(0.0) else "within noise"
            bounds = f"[{iv.lo:+.3g}, {iv.hi:+.3g}]" if iv.lo is not None else "(no interval)"
            print(f"  {c:15s} r={a['r']:g} - r={b['r']:g}: {iv.mean:+.3g} {bounds} "
                  f"n={iv.n} -> {verdict}")
            out["differences"].append({"metric": c, "a": a["r"], "b": b["r"],
                                       **iv.to_dict(), "clear": iv.excludes(0.0)})
    for c in ("FQ", "MU"):
        if c in cols:
            print("\n" + sweeps.suggestion_text(sweeps.suggest_r(rows, sweep, c)))
    out["table"] = [{"r": g["r"], "n": g["n"], **{c: g[c].to_dict() for c in cols}}
                    for g in groups]
    out.update(runs=len(rows), clear=clear, pairs=pairs,
               seeds=max((g["n"] for g in groups), default=0), r_values=len(groups))
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    from sga_core.projects.training import parse_r_values
    from sga_core.runs.seeds import sweep_configs, sweep_name

    demo = Demo(args.model, args.runs_dir)
    sweep = args.report
    if not sweep:
        sweep = sweep_name("bench-seeds")
        training = {"seeds": args.seeds, **({"max_steps": args.max_steps}
                                            if args.max_steps else {})}
        cfgs = sweep_configs(lambda g, r: demo.config(r=r, training=training, sweep=g),
                             parse_r_values(args.r), sweep, demo.root)
        t0 = time.time()
        for i, cfg in enumerate(cfgs, 1):
            run_dir, st = demo.run(cfg)
            print(f"[{i}/{len(cfgs)}] r={cfg.method_args['r']:g} seed={cfg.training.seed} "
                  f"{st.get('state')} eval={st.get('eval_state')} ({time.time() - t0:.0f}s)",
                  flush=True)
    out = report(demo, sweep)
    if not demo.tiny:
        (ROOT / "bench" / "seeds_result.json").write_text(json.dumps(out, indent=1))
    print(f"runs={out['runs']} seeds={out['seeds']} r_values={out['r_values']} "
          f"clear_differences={out['clear']}/{out['pairs']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
