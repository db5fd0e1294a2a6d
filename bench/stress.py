"""Benchmark (docs/stress-tests.md): does the forgetting of GA (SGA r = 0) and SGA at r = -0.8
and 0.4 hold under relearning, quantization and prompt attacks, on the demo with SmolLM2?

    python -m sga_core prepare --demo --which original   # once: runs/demo-original
    python bench/stress.py                                # 3 r values x 1 unlearning seed
    python bench/stress.py --seeds 0,1,2 --attack-seeds 0,1,2
    python bench/stress.py --model tiny --max-steps 2     # smoke test; numbers mean nothing

Each unlearning run uses assets/presets/demo-sga.yaml at its r (``--max-steps`` caps its
steps), is NOT evaluated (the stress tests score the forget answers themselves), and is then
attacked (``--attacks``) with :func:`sga_core.stress.run.stress_run`; the Original's plain
scores are computed once. Reported per r and attack: the forget probability after the
attack and the recovery, mean [95% t-interval] over the runs' seeds (each run's recovery
being the mean over its attack seeds), with the time each attack took. ``--out`` writes the
whole report as JSON. The last line is machine-readable.
"""

from __future__ import annotations

import argparse
import sys
import time

from demo_runs import Demo


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="the Original (default: the prepared demo "
                   "original); 'tiny' = random tiny models (smoke test)")
    p.add_argument("--r", default="0,-0.8,0.4", help="r values (default 0,-0.8,0.4)")
    p.add_argument("--seeds", default="0", help="unlearning seeds (default 0)")
    p.add_argument("--attack-seeds", default="0,1,2", help="seeds of the seeded attacks")
    p.add_argument("--attacks", default="default",
                   help="comma-separated attack names, all, or default (the stress "
                        "command's default attacks)")
    p.add_argument("--relearn-steps", default="10,50")
    p.add_argument("--max-steps", type=int, default=0, help="cap the preset's 25 steps")
    p.add_argument("--lr", type=float, default=0.0, help="override the preset's 1e-5")
    p.add_argument("--rouge", action="store_true", help="also generate answers for ROUGE-L "
                   "(slow on a CPU; off by default: the recovery is on the probability)")
    p.add_argument("--runs-dir", default=None)
    p.add_argument("--out", help="write the report as JSON here")
    return p.parse_args(argv)


def main(argv=None) -> int:
    from sga_core.evaluation.run import choose_device
    from sga_core.evaluation.settings import settings_from_config
    from sga_core.report.stats import t_interval
    from sga_core.stress import StressSettings
    from sga_core.stress.run import parse_attacks, score_original, stress_run

    args = parse_args(argv)
    demo = Demo(args.model, args.runs_dir)
    rs = [float(x) for x in args.r.split(",")]
    seeds = [int(x) for x in args.seeds.split(",")]
    attacks = parse_attacks(args.attacks)
    st = StressSettings(seeds=[int(x) for x in args.attack_seeds.split(",")],
                        relearn_steps=[int(x) for x in args.relearn_steps.split(",")],
                        rouge=args.rouge)
    original_scores = None
    per: dict[tuple[float, str], list[dict]] = {}
    timings: dict[str, list[float]] = {}
    train_s = []
    for r in rs:
        for seed in seeds:
            training = {"seed": seed, "probe_rows": [], "probe_every": 0, "eval_nll": False}
            if args.max_steps:
                training["max_steps"] = args.max_steps
            if args.lr:
                training["lr"] = args.lr
            cfg = demo.config(r=r, training=training, sweep=f"stress-bench-r{r:g}",
                              evaluate=False)
            t0 = time.time()
            run_dir, status = demo.run(cfg)
            train_s.append(time.time() - t0)
            if status.get("state") != "completed":
                print(f"r={r:g} seed {seed}: run {status.get('state')}: "
                      f"{status.get('error')}", file=sys.stderr)
                continue
            if original_scores is None:
                from sga_core.runs.folder import RunFolder

                es = settings_from_config(RunFolder(run_dir).config()).resolve()[1]
                es_dev = choose_device(es.device)
                t0 = time.time()
                original_scores = score_original(demo.model, demo.project.forget(), es,
                                                 es_dev, args.rouge)
                timings.setdefault("original scoring", []).append(time.time() - t0)
            t0 = time.time()
            res = stress_run(run_dir, attacks, st, original_scores=original_scores)
            timings.setdefault("all attacks of a run", []).append(time.time() - t0)
            for key, data in res.items():
                per.setdefault((r, key), []).append(data)
                fam = data["family"]
                if key == f"{fam}-{max(st.relearn_steps)}" or "-" not in key:
                    timings.setdefault(fam, []).append(data["timings"]["attack_s"])
            print(f"r={r:g} seed {seed}: {run_dir.name} done", flush=True)
    rows = []
    print("\n| r | attack | forget prob: unlearned | original | attacked | recovery | "
          "undefined |")
    print("|---|---|---|---|---|---|---|")
    for (r, key), results in sorted(per.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        heads = [(res.get("summary") or {}).get("probability") or {} for res in results]
        rec = t_interval([(h.get("recovery") or {}).get("mean") for h in heads])
        att = t_interval([(h.get("attacked") or {}).get("mean") for h in heads])
        unl = t_interval([h.get("unlearned") for h in heads])
        orig = t_interval([h.get("original") for h in heads])
        undefined = sum(h.get("undefined") or 0 for h in heads)
        within = [(h.get("recovery") or {}) for h in heads]
        rows.append({"r": r, "attack": key, "runs": len(results), "recovery": rec.to_dict(),
                     "attacked": att.to_dict(), "unlearned": unl.to_dict(),
                     "original": orig.to_dict(), "within_run": within,
                     "undefined_cases": undefined})
        print(f"| {r:g} | {key} | {_iv(unl)} | {_iv(orig)} | {_iv(att)} | "
              f"{_iv(rec, within)} | {undefined} |")
    print("\ncells: mean [95% t-interval over unlearning seeds]; with one unlearning seed, "
          "the recovery's interval is over the attack's own seeds (relearning rows, few-shot "
          "examples, role-play templates)")
    print("\nseconds per attack (2-core CPU, shared):")
    for name, vals in timings.items():
        print(f"  {name}: {sum(vals) / len(vals):.0f} s (n={len(vals)})")
    print(f"  unlearning run (training): {sum(train_s) / max(1, len(train_s)):.0f} s "
          f"(n={len(train_s)})")
    if args.out:
        from sga_core.fileio import atomic_write_json

        atomic_write_json(args.out, {"rows": rows, "timings_s": timings, "train_s": train_s,
                                     "settings": vars(args)})
    print(f"runs={len(train_s)} results={len(rows)} "
          f"attacks={','.join(attacks)}")
    return 0


def _iv(iv, within=None) -> str:
    if iv.mean is None:
        return "-"
    if iv.lo is not None:
        return f"{iv.mean:.3f} [{iv.lo:.3f}, {iv.hi:.3f}]"
    if within and len(within) == 1 and within[0].get("lo") is not None:
        w = within[0]
        return f"{iv.mean:.3f} [{w['lo']:.3f}, {w['hi']:.3f}]*"
    return f"{iv.mean:.3f}"


if __name__ == "__main__":
    sys.exit(main())
