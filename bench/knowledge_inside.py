"""Is the knowledge still inside? The white-box and real-quantizer stress results of a
paper-table group's runs, pooled per method over its unlearning seeds (docs/stress-tests.md):
per attack the attacked forget probability and the recovery, mean [95% t interval] over the
runs (each run's value the mean over its own cases: attack seeds, layers), with each
attack's time; then the probe's readings per layer (the Original and the Retained model,
the probe's two ends, beside each method), since on a small model the probe may read the two
ends alike and leave its recovery undefined.

    python -m sga_core stress RUN --attacks ATTACKS --no-rouge  # each run
    python bench/knowledge_inside.py --group paper-table-20261128-022545 --methods ga,sga \
        --attacks ATTACKS

(the attacks measured are in bench/README.md). An attack whose recovery runs between its own
readings of two control models (a result with ``baselines``: the probe) also gets the
per-layer table.

It reads the runs' ``stress/<attack>.json`` and writes nothing. Last line:
``runs=<n> attacks=<k>``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _mean(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return sum(xs) / len(xs) if xs else None


def fmt(iv) -> str:
    if iv.mean is None:
        return "undefined"
    if iv.lo is None:
        return f"{iv.mean:.3g}"
    return f"{iv.mean:.3g} [{iv.lo:.3g}, {iv.hi:.3g}]"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--group", required=True, help="bench/paper_table.py's group")
    p.add_argument("--methods", default="ga,sga")
    p.add_argument("--attacks", required=True, help="comma-separated attack result keys")
    args = p.parse_args(argv)
    from sga_core.report.stats import t_interval
    from sga_core.runs.folder import RunFolder, runs_root
    from sga_core.runs.listing import list_runs

    root = runs_root()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    attacks = [a.strip() for a in args.attacks.split(",") if a.strip()]
    runs = [r for r in reversed(list_runs(root)) if r.get("sweep") == args.group
            and r["method"] in methods and r["state"] == "completed"]
    per: dict = {}  # (method, attack) -> list of per-run dicts
    probe_layers: dict = {}  # (who, layer) -> readings over runs and seeds
    for r in runs:
        good, _ = RunFolder(r["path"]).stress_results()
        for attack in attacks:
            res = good.get(attack)
            if res is None:
                continue
            cases = [c for c in res.get("cases") or [] if c.get("metrics")]
            probs = [c["metrics"]["probability"] for c in cases]
            per.setdefault((r["method"], attack), []).append({
                "attacked": _mean(m["attacked"] for m in probs),
                "recovery": _mean(m["recovery"] for m in probs),
                "undefined": sum(m["recovery"] is None for m in probs), "cases": len(probs),
                "unlearned": _mean(m["unlearned"] for m in probs),
                "original": _mean(m["original"] for m in probs),
                "s": (res.get("timings") or {}).get("attack_s")})
            if res.get("baselines"):  # its own two ends, read per layer
                for c in cases:
                    layer, m = (c.get("info") or {}).get("layer"), c["metrics"]["probability"]
                    probe_layers.setdefault((r["method"], layer), []).append(m["attacked"])
                    probe_layers.setdefault(("Retained", layer), []).append(m["unlearned"])
                    probe_layers.setdefault(("Original", layer), []).append(m["original"])
    print(f"group {args.group}: {len(runs)} runs of {', '.join(methods)}\n")
    print("| method | attack | runs | forget p, attacked | recovery | undefined cases | "
          "unlearned / Original (the recovery's ends) | attack time (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for method in methods:
        for attack in attacks:
            got = per.get((method, attack)) or []
            if not got:
                continue
            att = t_interval([g["attacked"] for g in got if g["attacked"] is not None])
            rec = t_interval([g["recovery"] for g in got if g["recovery"] is not None])
            ends = f"{_mean(g['unlearned'] for g in got):.3g} / " \
                   f"{_mean(g['original'] for g in got):.3g}"
            print(f"| {method} | {attack} | {len(got)} | {fmt(att)} | {fmt(rec)} | "
                  f"{sum(g['undefined'] for g in got)} of {sum(g['cases'] for g in got)} | "
                  f"{ends} | {_mean(g['s'] for g in got):.0f} |")
    layers = sorted({k[1] for k in probe_layers if k[1] is not None})
    if layers:
        print("\nThe per-layer reading of the forget answers (mean over runs and "
              "seeds; the Retained model and the Original: the same probes, its two ends):\n")
        print("| model | " + " | ".join(f"layer {n}" for n in layers) + " |")
        print("|---|" + "---|" * len(layers))
        for who in ("Original", "Retained", *methods):
            vals = [_mean(probe_layers.get((who, n)) or []) for n in layers]
            print(f"| {who} | " + " | ".join("-" if v is None else f"{v:.4f}" for v in vals)
                  + " |")
    print(json.dumps({"runs": len(runs), "attacks": len(attacks)}))
    print(f"runs={len(runs)} attacks={len(attacks)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
