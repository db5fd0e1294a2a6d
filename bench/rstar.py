"""Benchmark: the per-sample r* analysis (docs/spec.md#21-closed-form) over the demo forget set, and
the step time of an adaptive-r SGA step against a fixed-r step over the same batch.

Last line: ``rstar_demo_s=<x> adaptive_step_ratio=<y>``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default=None, help="default: runs/demo-original/model if it "
                   "exists, else embedded:smollm2")
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--steps", type=int, default=4, help="measured steps per variant")
    p.add_argument("--skip-analysis", action="store_true",
                   help="only the adaptive/fixed step-time ratio")
    args = p.parse_args(argv)

    from sga_core.data import load_qa
    from sga_core.methods.sga.rstar import run_analysis
    from sga_core.model.loading import load_model
    from sga_core.normals.idk import idk_normals

    model_spec = args.model or (str(ROOT / "runs/demo-original/model")
                                if (ROOT / "runs/demo-original/model/config.json").exists()
                                else "embedded:smollm2")
    forget = load_qa(ROOT / "assets/demo/forget.jsonl")
    normals = idk_normals(len(forget), 4)
    load_model(model_spec)  # convert/cache once, outside the timing

    print(f"model: {model_spec}")
    rstar_s = float("nan")
    if not args.skip_analysis:
        t0 = time.time()
        res = run_analysis(model_spec, forget, normals, "qa", 4)
        rstar_s = time.time() - t0
        report_analysis(res, rstar_s, len(forget))
    step_ratio(model_spec, forget, normals, args, rstar_s)
    return 0


def report_analysis(res, rstar_s, n) -> None:
    s = res["summary"]
    print(f"r* analysis over {n} forget rows (all parameters): {rstar_s:.1f} s "
          f"(model load included)")
    print("r* per row: " + ", ".join(f"{r['r_star']:+.3f}" for r in res["rows"]
                                      if r["r_star"] is not None))
    print(f"r* > 0: {s['n_positive']}  r* < 0: {s['n_negative']}  median {s['median']:+.3f}  "
          f"IQR [{s['q1']:+.3f}, {s['q3']:+.3f}]")


def step_ratio(model_spec, forget, normals, args, rstar_s) -> None:
    import torch

    from sga_core.methods import MethodData, get_method
    from sga_core.methods.base import flatten
    from sga_core.methods.sga.adaptive import adaptive_gradient
    from sga_core.model.encoding import Encoder
    from sga_core.model.forward import forward_stats
    from sga_core.model.loading import load_model, load_tokenizer

    tok = load_tokenizer(model_spec)
    model = load_model(model_spec)
    enc = Encoder(tok)
    cls = get_method("sga")
    sga = cls(cls.Config(r=-0.8, k=4))
    units = sga.build_units(MethodData("qa", forget, normals=normals), enc)[:args.batch_size]
    opt = torch.optim.AdamW(model.parameters(), lr=0.0)  # lr 0: the model does not drift

    def fixed():
        opt.zero_grad(set_to_none=True)
        seqs, ids = flatten(units)
        stats = forward_stats(model, seqs, ids, enc.pad_id, "cpu")
        sga.unit_losses(stats, len(units)).mean().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def adaptive():
        opt.zero_grad(set_to_none=True)
        adaptive_gradient(model, units, k=4, convention="label", bounds=(-5.0, 1.0),
                          fallback_r=-0.8, pad_id=enc.pad_id, device="cpu",
                          scale=1 / len(units))
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    fixed()
    adaptive()  # warm-up
    times = {"fixed": [], "adaptive": []}
    for _ in range(args.steps):  # interleaved, so load changes hit both alike
        for name, fn in (("fixed", fixed), ("adaptive", adaptive)):
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    f_med, a_med = statistics.median(times["fixed"]), statistics.median(times["adaptive"])
    ratio = a_med / f_med
    print(f"step time over {len(units)} forget rows x K=4: fixed {f_med:.2f} s, adaptive "
          f"{a_med:.2f} s (median of {args.steps})")
    print(f"rstar_demo_s={rstar_s:.3f} adaptive_step_ratio={ratio:.3f}")


if __name__ == "__main__":
    sys.exit(main())
