"""Benchmark: peak resident memory of one SGA training step on text (every token scored).

    python bench/text_memory.py                         # SmolLM2, 1,024 tokens x batch 4 x K 4
    python bench/text_memory.py --variants off,auto     # before (the old CPU default) / after
    python bench/text_memory.py --model tiny --seq-len 64   # smoke mode, seconds

Each variant runs in a fresh child process (so one variant's memory never counts for
another): the model is loaded as a run loads it, a hand-built trainer (as in
``bench/train_step.py``) takes ``--steps`` SGA steps on ``--batch-size`` units of K
sequences of ``--seq-len`` random tokens, every token scored (a text set), and the child's
peak resident set (``ru_maxrss``) is reported, with the resident set after loading.

Variants are ``training.fused_loss`` modes: ``off`` (the head on all scored tokens at once:
what ``auto`` chose on the CPU before), ``chunked``, ``auto`` (what a run gets by default),
each optionally with ``+gc`` (gradient checkpointing asked for) or ``+nogc`` (never, not
even where the trainer turns it on by itself for a large micro-batch). The old default (before the
bounded loss) was ``off+nogc``.

The last line is machine-readable: ``<variant>_peak_gb=<x> ...``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sga_core.runs.offline import set_offline_defaults  # noqa: E402

set_offline_defaults()


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="embedded:smollm2",
                   help="model spec, or 'tiny' (a random tiny model: smoke mode)")
    p.add_argument("--seq-len", type=int, default=1024, help="tokens per sequence")
    p.add_argument("--batch-size", type=int, default=4, help="units (forget texts) per step")
    p.add_argument("--k", type=int, default=4, help="sequences per SGA unit (K)")
    p.add_argument("--steps", type=int, default=1, help="training steps per variant")
    p.add_argument("--variants", default="off+nogc,auto",
                   help="comma-separated fused_loss modes, each optionally '+gc'")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def rss_gb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024 ** 2
    return 0.0


def child(args) -> dict:
    import torch
    from accelerate import Accelerator

    from sga_core.config import TrainConfig
    from sga_core.methods import get_method
    from sga_core.methods.base import Unit
    from sga_core.methods.sga import SGAConfig
    from sga_core.model.encoding import Sequence
    from sga_core.model.fusedloss import for_run
    from sga_core.model.loading import load_model
    from sga_core.model.lora import for_training, micro_batch_tokens
    from sga_core.runs.memory import model_dims
    from sga_core.train.trainer import Trainer

    mode, _, extra = args.child.partition("+")
    spec = args.model
    if spec == "tiny":
        from sga_core.model.tiny import build_tiny_model

        spec = str(build_tiny_model(Path(tempfile.mkdtemp()) / "tiny"))
    cfg = TrainConfig(model=spec, method="sga", method_args={"r": -0.8, "k": args.k})
    t = cfg.training
    t.batch_size, t.grad_accum, t.max_grad_norm = args.batch_size, 1, 1.0
    t.fused_loss, t.gradient_checkpointing = mode, extra == "gc"
    tr = Trainer.__new__(Trainer)
    tr.cfg, tr.run_dir, tr._sigterm = cfg, Path(tempfile.gettempdir()), False
    tr.acc = Accelerator(cpu=True, gradient_accumulation_steps=1)
    tr.method = get_method("sga")(SGAConfig(r=-0.8, k=args.k))
    tr.reference = None
    vocab = model_dims(spec)["vocab"] if model_dims(spec) else 49152
    g = torch.Generator().manual_seed(0)
    units = []
    for i in range(args.batch_size):
        seqs = []
        for j in range(args.k):
            ids = torch.randint(0, vocab, (args.seq_len,), generator=g).tolist()
            seqs.append(Sequence(ids, list(ids), role="forget" if j == 0 else "normal"))
        units.append(Unit(index=i, seqs=seqs))
    tr.units = units
    # as the trainer does: gradient checkpointing by itself for a micro-batch over
    # CHECKPOINT_TOKENS tokens (and always with '+gc')
    # ('+nogc': never, as before the bounded loss: the old default is 'off+nogc')
    model = for_training(load_model(spec, dtype="float32"), t,
                         0 if extra == "nogc" else
                         micro_batch_tokens(units, t.batch_size, t.grad_accum))
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    tr.model, tr.opt = tr.acc.prepare(model, opt)
    tr.sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)
    tr.loss_fn = for_run(mode, tr.acc, tr.model)
    checkpointed = bool(getattr(model, "is_gradient_checkpointing", False))

    class Enc:
        pad_id = 0

    tr.enc = Enc()
    loaded = rss_gb()
    t0 = time.perf_counter()
    loss = None
    for _ in range(args.steps):
        loss = tr.train_step(list(range(args.batch_size)))["loss"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2
    return {"variant": args.child, "loaded_gb": round(loaded, 2), "peak_gb": round(peak, 2),
            "step_s": round((time.perf_counter() - t0) / args.steps, 1), "loss": loss,
            "tokens": args.batch_size * args.k * args.seq_len, "vocab": vocab,
            "checkpointing": checkpointed}


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return
    rows = []
    for v in [v.strip() for v in args.variants.split(",") if v.strip()]:
        cmd = [sys.executable, __file__, "--child", v, "--model", args.model,
               "--seq-len", str(args.seq_len), "--batch-size", str(args.batch_size),
               "--k", str(args.k), "--steps", str(args.steps)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            rows.append({"variant": v, "error": f"exit {proc.returncode}: {' / '.join(tail)}"})
        else:
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    print(f"\n{args.model}: {args.seq_len} tokens x batch {args.batch_size} x K {args.k}")
    print(f"{'variant':<14}{'loaded GB':>10}{'peak GB':>10}{'s/step':>9}  checkpointing")
    for r in rows:
        if "error" in r:
            print(f"{r['variant']:<14}{r['error']}")
        else:
            print(f"{r['variant']:<14}{r['loaded_gb']:>10}{r['peak_gb']:>10}{r['step_s']:>9}"
                  f"  {'on' if r['checkpointing'] else 'off'}")
    print(" ".join(f"{r['variant'].replace('+', '_')}_peak_gb={r.get('peak_gb', 'error')}"
                   for r in rows))


if __name__ == "__main__":
    main()
