"""Benchmark (docs/stress-tests.md#real-quantizers): what each quantization attack costs and
changes on one model, on this machine: the time to quantize the linear layers, the share of
their weights that changed, and each whole attack (copy, quantize, re-score a few forget rows
with the layer view, no ROUGE) through :func:`sga_core.stress.run.stress_model`.

    python bench/quantizers.py               # every quantization attack, embedded:smollm2
    python bench/quantizers.py --model PATH --rows 10 --attacks nf4

The model is attacked as it is (no Original: the recoveries are undefined; the recoveries on
unlearned runs come from bench/stress.py --attacks ...). The last line is machine-readable.
"""

from __future__ import annotations

import argparse
import copy
import json
import tempfile
import time
from pathlib import Path


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="embedded:smollm2")
    p.add_argument("--rows", type=int, default=4, help="demo forget rows re-scored")
    p.add_argument("--attacks", default="", help="comma-separated attack names (default: "
                   "every quantization attack of the registry, simulated and real)")
    p.add_argument("--device", default="cpu")
    return p.parse_args(argv)


def quantize(model, name: str, device: str):
    """``model`` quantized in place as attack ``name`` does; the layer names it changed."""
    from sga_core.stress.attacks import get_attack
    from sga_core.stress.bnb import BitsAndBytesAttack, quantize_bnb
    from sga_core.stress.quantization import RoundToNearest, quantize_model, quantized_modules
    from sga_core.stress.settings import settings_class

    cls, st = get_attack(name), settings_class()()
    names = [n for n, _ in quantized_modules(model)]
    if issubclass(cls, RoundToNearest):
        quantize_model(model, cls.bits, st.quant_group_size, st.quant_symmetric)
    elif issubclass(cls, BitsAndBytesAttack):
        names = quantize_bnb(model, cls.quant_type, device, **cls().options(st))
    else:
        raise SystemExit(f"{name} is not a quantization attack")
    return names


def quantization_attacks() -> list[str]:
    from sga_core.stress.attacks import attacks
    from sga_core.stress.bnb import BitsAndBytesAttack
    from sga_core.stress.quantization import RoundToNearest

    return [c.name for c in attacks() if issubclass(c, (RoundToNearest, BitsAndBytesAttack))]


def weight(model, name: str):
    from sga_core.stress.bnb import dequantized

    mod = model.get_submodule(name)
    return mod.weight if type(mod.weight).__name__ == "Parameter" else dequantized(mod)


def main(argv=None) -> int:
    from sga_core.assets import DEMO_DIR
    from sga_core.data import load_qa
    from sga_core.evaluation.run import load_model_and_tokenizer
    from sga_core.evaluation.settings import EvalSettings
    from sga_core.stress import StressSettings
    from sga_core.stress.quantization import quantized_modules
    from sga_core.stress.run import parse_attacks, stress_model

    args = parse_args(argv)
    attacks = parse_attacks(args.attacks) if args.attacks else quantization_attacks()
    forget = load_qa(DEMO_DIR / "forget.jsonl")[:args.rows]
    m, _ = load_model_and_tokenizer(args.model, device=args.device)
    before = {n: x.weight.detach().clone() for n, x in quantized_modules(m)}
    total = sum(w.numel() for w in before.values())
    report = {"model": args.model, "rows": len(forget), "linear_weights": total}
    for name in attacks:
        q = copy.deepcopy(m)
        t = time.time()
        names = quantize(q, name, args.device)
        report[f"{name}_quantize_s"] = round(time.time() - t, 2)
        report[f"{name}_changed"] = round(sum(
            int((weight(q, n).float() != before[n].float()).sum()) for n in names) / total, 4)
        del q
    del m
    es = EvalSettings(device=args.device)
    with tempfile.TemporaryDirectory() as out:
        for name in attacks:
            res = stress_model(args.model, Path(out) / name, forget, attacks=[name],
                               settings=StressSettings(rouge=False), eval_settings=es)[name]
            report[f"{name}_attack_s"] = res["timings"]["attack_s"]
            print(f"{name}: quantize {report[f'{name}_quantize_s']} s, whole attack "
                  f"{report[f'{name}_attack_s']} s, {report[f'{name}_changed']:.1%} of "
                  f"{total:,} linear weights changed", flush=True)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
