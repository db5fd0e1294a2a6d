"""Benchmark (GPU): the SGA training step against a bare Hugging Face step, in tokens/s, their
ratio, the MFU against a bf16 matmul peak this script measures, and the peak GPU memory; for
SmolLM2-135M and random-init models of 1.7B and 7B shape (built here, nothing downloaded),
with full fine-tuning and with LoRA; plus SmolLM2's evaluation peak memory.

    python bench/gpu_step.py                                  # everything that fits
    python bench/gpu_step.py --models 1.7b --modes full --batch 32 --k 4 --seq-len 256
    python bench/gpu_step.py --models 7b --modes lora --batch 8 --k 4 --seq-len 512
    python bench/gpu_step.py --cpu-smoke                       # tiny shapes on the CPU

On a machine without a CUDA GPU it prints "no GPU" and exits 0 (``--cpu-smoke`` runs the same
code with tiny shapes on the CPU instead: a check of the script, its timings mean nothing).

- **peak**: the best of a few bf16 [8192 x 8192] @ [8192 x 8192] matmuls (TFLOP/s);
- **SGA step**: ``Trainer.train_step`` on a hand-built trainer (bf16 autocast through
  accelerate, AdamW, clip 1.0; the head at label positions only, the fused loss as
  ``--fused-loss`` says), SGA r=-0.8 with K sequences per unit (the forget answer and K-1
  normal answers of the same prompt);
- **bare step**: the same padded batch through ``model(input_ids, attention_mask, labels)``
  (HF's mean cross-entropy over every position's logits), backward, clip, AdamW, zero_grad;
- **MFU**: nominal model FLOPs per real token (6 N + 12 L d T for full fine-tuning, 4 N +
  8 L d T with LoRA: no weight gradients of the frozen matrices; N = the matmul parameters,
  the head included) x tokens/s / peak;
- **peak memory**: ``torch.cuda.max_memory_allocated`` over each variant's steps.
Sequences: a random prompt of ``--prompt-len`` tokens and answers of ``--seq-len`` minus that,
lengths jittered by up to 10 % so batches carry some padding, as real data does.

The last line: ``sga_tok_s=<x> bare_tok_s=<y> ratio=<r> mfu=<m> peak_gib=<g>`` of the last
configuration measured (or ``gpu=none``).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sga_core.runs.offline import set_offline_defaults  # noqa: E402

set_offline_defaults()

SHAPES = {  # hidden, intermediate, layers, heads, kv heads, vocab (Llama architecture)
    "1.7b": (2048, 8192, 24, 32, 32, 49152),  # SmolLM2-1.7B
    "7b": (4096, 11008, 32, 32, 32, 32000),  # Llama-2-7B
    "tiny": (64, 128, 2, 4, 4, 4096),  # --cpu-smoke
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="smollm2,1.7b,7b",
                   help="comma list of smollm2 (the embedded SmolLM2-135M), 1.7b, 7b")
    p.add_argument("--modes", default="full,lora", help="comma list of full, lora")
    p.add_argument("--batch", type=int, default=None,
                   help="units per step (default 32; 8 for 7b)")
    p.add_argument("--k", type=int, default=4, help="sequences per unit (SGA's K)")
    p.add_argument("--seq-len", type=int, default=None,
                   help="tokens per sequence (default 256; 512 for 7b)")
    p.add_argument("--prompt-len", type=int, default=None, help="default: a third")
    p.add_argument("--steps", type=int, default=5, help="measured steps after 2 warm-ups")
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--vocab", type=int, default=None, help="override the vocabulary size")
    p.add_argument("--fused-loss", default="auto", choices=("auto", "off", "chunked", "liger"))
    p.add_argument("--gradient-checkpointing", action="store_true")
    p.add_argument("--no-eval", action="store_true", help="skip SmolLM2's evaluation memory")
    p.add_argument("--cpu-smoke", action="store_true",
                   help="no GPU: run tiny shapes on the CPU (checks the script only)")
    return p.parse_args(argv)


# ------------------------------------------------------------------------- hardware -----

def bf16_peak_tflops(device, n: int = 8192, reps: int = 10) -> float:
    import torch

    if device.type != "cuda":
        n, reps = 512, 3
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    best = float("inf")
    for _ in range(reps + 2):
        sync(device)
        t0 = time.perf_counter()
        for _ in range(4):
            a @ b
        sync(device)
        best = min(best, (time.perf_counter() - t0) / 4)
    del a, b
    return 2 * n ** 3 / best / 1e12


def sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


# ---------------------------------------------------------------------------- models ----

def build_model(name: str, vocab: int | None, dtype):
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    if name == "smollm2":
        from sga_core.model.loading import resolve_model_path

        return AutoModelForCausalLM.from_pretrained(resolve_model_path("embedded:smollm2"),
                                                    dtype=dtype)
    h, inter, layers, heads, kv, v = SHAPES[name]
    cfg = LlamaConfig(vocab_size=vocab or v, hidden_size=h, intermediate_size=inter,
                      num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=kv, max_position_embeddings=4096,
                      tie_word_embeddings=name != "7b")
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        return LlamaForCausalLM(cfg).to(dtype)


def matmul_params(model) -> int:
    """Parameters that take part in matmuls: all but the input embedding, plus the head
    (counted once even when tied)."""
    emb = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    total = sum(p.numel() for p in model.parameters())
    return total - emb.numel() + (head.numel() if head is emb else 0)


def nominal_flops_per_token(model, seq_len: int, lora: bool) -> float:
    cfg = model.config
    n = matmul_params(model)
    attn = cfg.num_hidden_layers * cfg.hidden_size * seq_len
    return (4 * n + 8 * attn) if lora else (6 * n + 12 * attn)


# ------------------------------------------------------------------------------ data -----

def make_units(n_units: int, k: int, seq_len: int, prompt_len: int, vocab: int, seed: int = 0):
    import random

    from sga_core.methods.base import Unit
    from sga_core.model.encoding import IGNORE, Sequence

    rng = random.Random(seed)
    units = []
    for i in range(n_units):
        p_len = max(2, int(prompt_len * rng.uniform(0.9, 1.0)))
        prompt = [rng.randrange(3, vocab) for _ in range(p_len)]
        seqs = []
        for j in range(k):
            a_len = max(2, int((seq_len - prompt_len) * rng.uniform(0.9, 1.0)))
            ans = [rng.randrange(3, vocab) for _ in range(a_len)]
            seqs.append(Sequence(prompt + ans, [IGNORE] * p_len + ans,
                                 "forget" if j == 0 else "normal", {"forget_index": i}))
        units.append(Unit(i, seqs))
    return units


# ---------------------------------------------------------------------------- steps -----

def make_trainer(model, units, device, lr_params, fused: str, lora: bool):
    import torch
    from accelerate import Accelerator

    from sga_core.config import TrainConfig
    from sga_core.methods.sga import SGA, SGAConfig
    from sga_core.model import fusedloss
    from sga_core.model.labelhead import can_stash
    from sga_core.train.schedule import make_scheduler
    from sga_core.train.trainer import Trainer

    cfg = TrainConfig(method="sga", method_args={"r": -0.8, "k": len(units[0].seqs)})
    cfg.training.batch_size = len(units)
    tr = Trainer.__new__(Trainer)
    tr.cfg, tr.run_dir, tr._sigterm = cfg, Path(tempfile.gettempdir()), False
    tr.acc = Accelerator(cpu=device.type != "cuda",
                         mixed_precision="bf16" if device.type == "cuda" else "no")
    opt = torch.optim.AdamW(lr_params, lr=1e-5)
    tr.sched = make_scheduler(opt, "constant", 0, 10_000)
    tr.model, tr.opt = tr.acc.prepare(model, opt)
    tr.method = SGA(SGAConfig(r=-0.8, k=len(units[0].seqs)))
    tr.units, tr.reference = units, None
    tr.enc = type("Enc", (), {"pad_id": 0})()
    tr.loss_fn = fusedloss.loss_function(fusedloss.choose(
        fused, on_gpu=device.type == "cuda", stashable=can_stash(tr.model)),
        tr.acc.mixed_precision)
    return tr


def bare_step(tr, batch) -> None:
    import torch

    from sga_core.methods.base import flatten
    from sga_core.model.encoding import collate

    seqs, _ = flatten([tr.units[i] for i in batch])
    b = {k: v.to(tr.acc.device) for k, v in collate(seqs, 0).items()}
    out = tr.model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                   labels=b["labels"], use_cache=False)
    tr.acc.backward(out.loss)
    torch.nn.utils.clip_grad_norm_([p for p in tr.model.parameters() if p.requires_grad], 1.0)
    tr.opt.step()
    tr.opt.zero_grad(set_to_none=True)


def measure(tr, batches, fn, device) -> tuple[list[float], float]:
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = []
    for i, batch in enumerate(batches):
        sync(device)
        t0 = time.perf_counter()
        fn(tr, batch)
        sync(device)
        if i >= 2:
            times.append(time.perf_counter() - t0)
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else float("nan")
    return times, peak


def run_config(name: str, mode: str, args, device, peak_tflops: float) -> dict | None:
    import torch

    from sga_core.methods.base import flatten

    seven = name == "7b"
    batch = args.batch or (8 if seven else 32)
    seq_len = args.seq_len or (512 if seven else 256)
    if args.cpu_smoke:
        name, batch, seq_len = "tiny", 2, 32
    prompt_len = args.prompt_len or seq_len // 3
    lora = mode == "lora"
    if seven and not lora:
        print(f"  {name} full fine-tuning: skipped (fp32 master weights + AdamW need about "
              "112 GB; use --modes lora)")
        return None
    dtype = torch.bfloat16 if (lora and device.type == "cuda") else torch.float32
    model = build_model(name, args.vocab, dtype).to(device)
    model.config.use_cache = False
    if args.gradient_checkpointing:
        from sga_core.model.lora import enable_checkpointing

        enable_checkpointing(model)
    if lora:
        from sga_core.config import TrainingArgs
        from sga_core.model.lora import apply_lora

        t = TrainingArgs(lora_rank=args.lora_rank, lora_alpha=2.0 * args.lora_rank)
        model = apply_lora(model, t)
    model.train()
    vocab = model.config.vocab_size
    units = make_units(batch * (args.steps + 2), args.k, seq_len, prompt_len, vocab)
    batches = [list(range(i * batch, (i + 1) * batch)) for i in range(args.steps + 2)]
    tr = make_trainer(model, units, device, [p for p in model.parameters() if p.requires_grad],
                      args.fused_loss, lora)
    tokens = [sum(len(s) for s in flatten([units[i] for i in b])[0]) for b in batches[2:]]
    flops_tok = nominal_flops_per_token(tr.acc.unwrap_model(tr.model), seq_len, lora)
    out = {}
    for variant, fn in (("sga", lambda tr_, b: tr_.train_step(b)), ("bare", bare_step)):
        try:
            times, peak = measure(tr, batches, fn, device)
        except torch.OutOfMemoryError:
            print(f"  {name} {mode} {variant}: out of GPU memory")
            out[variant] = None
            continue
        tps = statistics.median(n / t for n, t in zip(tokens, times))
        out[variant] = {"tok_s": tps, "mfu": tps * flops_tok / (peak_tflops * 1e12),
                        "peak_gib": peak}
    del tr, model
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    s, b = out.get("sga"), out.get("bare")
    ratio = s["tok_s"] / b["tok_s"] if s and b else float("nan")
    print(f"  {name:8s} {mode:5s} batch {batch}x{args.k} len {seq_len}: "
          + "  ".join(f"{v} {r['tok_s']:9.0f} tok/s MFU {r['mfu']:.3f} peak {r['peak_gib']:.1f} "
                      f"GiB" for v, r in out.items() if r)
          + f"  ratio sga/bare {ratio:.3f}", flush=True)
    return {"name": name, "mode": mode, "ratio": ratio, **{f"{v}": r for v, r in out.items()}}


def eval_memory(device) -> None:
    """SmolLM2's evaluation on the demo data: peak GPU memory over the weights."""
    import torch

    from sga_core.evaluation import EvalSettings, evaluate_model

    demo = ROOT / "assets" / "demo"
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        summary = evaluate_model(
            "embedded:smollm2", tmp, str(demo / "forget.jsonl"), str(demo / "retain.jsonl"),
            {"real_authors": str(demo / "real_authors.jsonl"),
             "world_facts": str(demo / "world_facts.jsonl")},
            task="qa", settings=EvalSettings(device=str(device)))
        wall = time.perf_counter() - t0
    peak = (torch.cuda.max_memory_allocated() - base) / 2**30
    weights = 134_515_008 * 4 / 2**30  # SmolLM2-135M in float32
    print(f"  evaluation (SmolLM2, demo, batch 16): {wall:.1f} s, peak {peak:.2f} GiB = "
          f"weights {weights:.2f} GiB + {peak - weights:.2f} GiB (target: + 2 GiB at most); "
          f"rows {summary['rows']}", flush=True)


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    if not torch.cuda.is_available() and not args.cpu_smoke:
        print("no GPU: this benchmark needs a CUDA GPU (torch.cuda.is_available() is False); "
              "nothing measured. `--cpu-smoke` checks the script with tiny shapes on the CPU.")
        print("gpu=none")
        return 0
    device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu_smoke
                          else "cpu")
    name = torch.cuda.get_device_name(0) if device.type == "cuda" else "CPU (smoke mode)"
    peak = bf16_peak_tflops(device)
    print(f"device: {name}  bf16 matmul peak (measured): {peak:.0f} TFLOP/s  "
          f"fused loss: {args.fused_loss}", flush=True)
    results = []
    models = ["smollm2"] if args.cpu_smoke else [m for m in args.models.split(",") if m]
    for model in models:
        for mode in [m for m in args.modes.split(",") if m]:
            r = run_config(model, mode, args, device, peak)
            if r:
                results.append(r)
    if device.type == "cuda" and not args.no_eval and "smollm2" in models:
        eval_memory(device)
    last = results[-1] if results else None
    if last and last.get("sga") and last.get("bare"):
        print(f"sga_tok_s={last['sga']['tok_s']:.0f} bare_tok_s={last['bare']['tok_s']:.0f} "
              f"ratio={last['ratio']:.3f} mfu={last['sga']['mfu']:.3f} "
              f"peak_gib={last['sga']['peak_gib']:.1f}")
    else:
        print("gpu=measured-nothing")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
