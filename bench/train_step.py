"""Benchmark: the SGA training step against a bare causal-LM step on the same padded batch,
and the padding efficiency of SGA batches on the demo forget set.

    python bench/train_step.py                      # embedded SmolLM2-135M (the default)
    python bench/train_step.py --model tiny --steps 2   # seconds; a random tiny model

The SGA step is ``Trainer.train_step`` itself, driven on a hand-built trainer (one CPU
process, no run folder). The bare step collates the same units' sequences into the same padded
batch and runs ``model(input_ids, attention_mask, labels)`` (HF's built-in mean cross-entropy)
-> backward -> clip 1.0 -> AdamW step -> zero_grad. The two variants are interleaved step by
step (A,B then B,A, ...) on the same batches, because another process may share the CPU, and
medians are reported. Tokens are real (non-pad) input tokens in both variants.

The last line is machine-readable:
``sga_step_vs_bare_ratio=<x> padding_efficiency=<y>``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEMO = ROOT / "assets" / "demo"

from sga_core.runs.offline import set_offline_defaults  # noqa: E402

set_offline_defaults()

K = 4
R = -0.8  # the SGA default (coefficients only change weights, not the cost)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="embedded:smollm2",
                   help="model spec (embedded:smollm2, a folder, a hub id) or 'tiny' for a "
                        "random tiny model built into a temp folder (smoke mode)")
    p.add_argument("--batch-size", type=int, default=4,
                   help=f"forget samples per step (each SGA unit is the forget answer + "
                        f"K-1={K - 1} normal answers, so 4 samples = {4 * K} sequences)")
    p.add_argument("--steps", type=int, default=5,
                   help="measured steps per variant, after 1 warm-up step of each")
    p.add_argument("--threads", type=int, default=None,
                   help="torch intra-op threads (default: torch's default)")
    p.add_argument("--seed", type=int, default=0, help="data order seed (make_batches)")
    p.add_argument("--profile", action="store_true",
                   help="also time the pieces of each step (forward, loss, backward, ...)")
    args = p.parse_args(argv)
    if args.steps < 1 or args.batch_size < 1:
        p.error("--steps and --batch-size must be >= 1")
    return args


# ---------------------------------------------------------------------------- data ------

def build_units(enc, rows):
    """SGA units (forget answer + K-1 IDK normal answers) for ``rows`` treated as forget rows."""
    from sga_core.assets import idk_templates as load_idk_templates
    from sga_core.methods import MethodData, get_method
    from sga_core.methods.sga import SGAConfig
    from sga_core.normals.idk import idk_normals

    method = get_method("sga")(SGAConfig(r=R, k=K))
    data = MethodData(kind="qa", forget=rows, normals=idk_normals(len(rows), K, seed=0),
                      idk_templates=load_idk_templates())
    return method, method.build_units(data, enc)


def batch_seqs(units, batches):
    from sga_core.methods.base import flatten

    return [flatten([units[i] for i in b])[0] for b in batches]


def padding_report(units, batch_size, seeds=range(10)):
    """Padding efficiency of one epoch's SGA batches, with and without length grouping."""
    from sga_core.model.encoding import padding_efficiency
    from sga_core.train.batches import make_batches

    out = {}
    for grouped in (True, False):
        effs = [padding_efficiency(batch_seqs(units, make_batches(units, batch_size, s, 0,
                                                                  grouped)))
                for s in seeds]
        out[grouped] = (effs[0], statistics.mean(effs))
    # ceiling for any batching of whole units: every unit padded only to its own longest seq
    out["per_unit"] = padding_efficiency([u.seqs for u in units])
    # what is inside a unit: lengths of the forget sequence vs its normals
    out["prompt"] = statistics.mean(sum(1 for t in u.seqs[0].labels if t == -100)
                                    for u in units)
    out["forget_len"] = statistics.mean(len(u.seqs[0]) for u in units)
    out["normal_len"] = statistics.mean(len(s) for u in units for s in u.seqs[1:])
    out["unit_max"] = statistics.mean(u.max_len for u in units)
    return out


# ---------------------------------------------------------------------------- steps -----

class BenchTrainer:
    """What ``Trainer.train_step`` reads, set by hand (no run folder, no status files)."""


def make_trainer(model_spec, method, units, enc, batch_size):
    import torch
    from accelerate import Accelerator
    from transformers import get_scheduler

    from sga_core.config import TrainConfig
    from sga_core.model.loading import load_model
    from sga_core.train.trainer import Trainer

    cfg = TrainConfig(model=model_spec, method="sga", method_args={"r": R, "k": K})
    cfg.training.batch_size = batch_size
    cfg.training.grad_accum = 1
    cfg.training.max_grad_norm = 1.0
    tr = Trainer.__new__(Trainer)
    tr.cfg = cfg
    tr.run_dir = Path(tempfile.gettempdir())
    tr._sigterm = False
    tr.acc = Accelerator(cpu=True, gradient_accumulation_steps=1)
    model = load_model(model_spec, dtype="float32")
    model.config.use_cache = False
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.training.lr,
                            weight_decay=cfg.training.weight_decay)
    tr.sched = get_scheduler("constant_with_warmup", opt, num_warmup_steps=0,
                             num_training_steps=10_000)
    tr.model, tr.opt = tr.acc.prepare(model, opt)
    tr.method, tr.units, tr.enc = method, units, enc
    tr.ref_model = tr.reference = tr.loss_fn = None  # older checkouts name the reference ref_model
    return tr


def n_real_tokens(tr, batch):
    from sga_core.methods.base import flatten

    return sum(len(s) for s in flatten([tr.units[i] for i in batch])[0])


def sga_step(tr, batch):
    t0 = time.perf_counter()
    tr.train_step(batch)
    return time.perf_counter() - t0


def bare_step(tr, batch):
    """Plain causal-LM step on the same padded batch: HF's own mean cross-entropy."""
    import torch

    from sga_core.methods.base import flatten
    from sga_core.model.encoding import collate

    model, opt = tr.model, tr.opt.optimizer
    t0 = time.perf_counter()
    seqs, _ = flatten([tr.units[i] for i in batch])
    b = collate(seqs, tr.enc.pad_id)
    out = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                labels=b["labels"], use_cache=False)
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return time.perf_counter() - t0


def profile_step(tr, batch):
    """Time the pieces of the SGA step and of the bare step on one batch (seconds)."""
    import torch
    import torch.nn.functional as F

    from sga_core.methods.base import flatten
    from sga_core.model.encoding import collate
    from sga_core.model.losses import sequence_nll

    model, opt = tr.model, tr.opt.optimizer
    times = {}

    def lap(name, t):
        now = time.perf_counter()
        times[name] = times.get(name, 0.0) + now - t
        return now

    seqs, ids = flatten([tr.units[i] for i in batch])
    t = time.perf_counter()
    b = collate(seqs, tr.enc.pad_id)
    t = lap("collate", t)
    # SGA: logits -> sequence_nll -> unit losses -> backward
    out = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"], use_cache=False)
    t = lap("sga forward (logits)", t)
    mean_nll, _, _ = sequence_nll(out.logits, b["labels"])
    t = lap("sga sequence_nll", t)
    stats = type("S", (), {})()
    stats.mean_nll, stats.roles = mean_nll, [s.role for s in seqs]
    stats.unit_ids = torch.tensor(ids)
    loss = tr.method.unit_losses(stats, len(batch)).mean()
    t = lap("sga unit_losses", t)
    loss.backward()
    t = lap("sga backward", t)
    opt.zero_grad(set_to_none=True)
    t = time.perf_counter()
    # bare: HF loss
    out = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                labels=b["labels"], use_cache=False)
    t = lap("bare forward+HF loss", t)
    out.loss.backward()
    t = lap("bare backward", t)
    opt.zero_grad(set_to_none=True)
    # the loss alone, on detached logits: forward and backward of each loss formulation
    logits = out.logits.detach().requires_grad_(True)
    t = time.perf_counter()
    sequence_nll(logits, b["labels"])[0].sum().backward()
    t = lap("loss only: sequence_nll fwd+bwd", t)
    logits.grad = None
    t = time.perf_counter()
    F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)),
                    b["labels"][:, 1:].reshape(-1), ignore_index=-100).backward()
    t = lap("loss only: HF-style CE fwd+bwd", t)
    logits.grad = None
    del logits, out
    # the trainer's per-step divergence guard (if this version has one): a full copy of the
    # weights before the optimizer step, and a per-parameter finiteness check after it
    params = list(model.parameters())
    t = time.perf_counter()
    backup = [p.detach().clone() for p in params]
    t = lap("guard: clone all weights", t)
    del backup
    if hasattr(tr, "weights_finite"):
        t = time.perf_counter()
        tr.weights_finite()
        t = lap("guard: Trainer.weights_finite()", t)
    t = time.perf_counter()
    with torch.no_grad():
        bool(torch.isfinite(torch.stack(torch._foreach_norm(params))).all())
    t = lap("alt: one _foreach_norm finiteness", t)
    return times


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    from sga_core.data import load_dataset
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_tokenizer
    from sga_core.train.batches import make_batches

    tmp = None
    spec = args.model
    if spec == "tiny":
        from sga_core.model.tiny import build_tiny_model

        tmp = tempfile.TemporaryDirectory(prefix="sga-bench-")
        spec = str(build_tiny_model(Path(tmp.name) / "tiny"))
    t_load = time.perf_counter()
    tok = load_tokenizer(spec)
    enc = Encoder(tok, max_length=256)
    forget = load_dataset(DEMO / "forget.jsonl", kind="qa").rows
    retain = load_dataset(DEMO / "retain.jsonl", kind="qa").rows

    # padding: the demo forget set (the headline), and forget + retain rows for comparison
    method, forget_units = build_units(enc, forget)
    _, pool_units = build_units(enc, forget + retain)
    pad_f = padding_report(forget_units, args.batch_size)
    pad_p = padding_report(pool_units, args.batch_size)

    # throughput: batches of one epoch over forget + retain rows (forget rows alone give only
    # ceil(10 / batch) distinct batches), length-grouped as training does
    tr = make_trainer(spec, method, pool_units, enc, args.batch_size)
    load_s = time.perf_counter() - t_load
    batches = make_batches(pool_units, args.batch_size, args.seed, 0, True)
    need = args.steps + 1
    batches = (batches * (need // max(len(batches), 1) + 1))[:need]

    print(f"model: {args.model}{' (' + spec + ')' if spec != args.model else ''}  "
          f"params: {sum(p.numel() for p in tr.model.parameters()) / 1e6:.1f}M  "
          f"vocab: {tr.model.config.vocab_size}  threads: {torch.get_num_threads()}  "
          f"setup: {load_s:.1f}s", flush=True)
    print(f"SGA r={R} K={K}: batch {args.batch_size} forget samples = "
          f"{args.batch_size * K} sequences; {args.steps} measured steps per variant after "
          f"1 warm-up, interleaved", flush=True)

    sga_tps, bare_tps, ratios = [], [], []
    for i, batch in enumerate(batches):
        ntok = n_real_tokens(tr, batch)
        order = [("sga", sga_step), ("bare", bare_step)]
        if i % 2:
            order.reverse()
        dt = {}
        for name, fn in order:
            dt[name] = fn(tr, batch)
        width = max(len(s) for s in batch_seqs(tr.units, [batch])[0])
        tag = "warm-up" if i == 0 else f"step {i}"
        print(f"  {tag:8s} tokens={ntok:5d} (padded {args.batch_size * K}x{width})  "
              f"sga {dt['sga']:.3f}s {ntok / dt['sga']:8.1f} tok/s  "
              f"bare {dt['bare']:.3f}s {ntok / dt['bare']:8.1f} tok/s  "
              f"ratio {dt['bare'] / dt['sga']:.3f}", flush=True)
        if i == 0:
            continue
        sga_tps.append(ntok / dt["sga"])
        bare_tps.append(ntok / dt["bare"])
        ratios.append(dt["bare"] / dt["sga"])  # = (tok/s sga) / (tok/s bare), same tokens

    ratio = median(ratios)
    print()
    print(f"{'variant':34s} {'median tok/s':>12s}")
    print(f"{'SGA step (Trainer.train_step)':34s} {median(sga_tps):12.1f}")
    print(f"{'bare step (HF loss)':34s} {median(bare_tps):12.1f}")
    print(f"{'ratio sga/bare (median of pairs)':34s} {ratio:12.3f}   target >= 0.95")
    print()
    print(f"padding efficiency, one epoch, batch {args.batch_size} "
          f"(seed {args.seed}; mean over seeds 0-9 in brackets):")
    print(f"{'data':28s} {'grouped':>15s} {'not grouped':>15s} {'per-unit ceiling':>17s}")
    for name, rep, n in (("demo forget", pad_f, len(forget_units)),
                         ("forget + retain", pad_p, len(pool_units))):
        print(f"{name + f' ({n} units)':28s} {rep[True][0]:7.3f} [{rep[True][1]:.3f}] "
              f"{rep[False][0]:7.3f} [{rep[False][1]:.3f}] {rep['per_unit']:17.3f}")
    print(f"demo forget units: mean prompt {pad_f['prompt']:.1f} tokens, forget seq "
          f"{pad_f['forget_len']:.1f}, normal seq {pad_f['normal_len']:.1f}, unit max "
          f"{pad_f['unit_max']:.1f}   (target grouped >= 0.85)")

    if args.profile:
        prof: dict[str, list[float]] = {}
        for batch in batches[1:]:
            for k, v in profile_step(tr, batch).items():
                prof.setdefault(k, []).append(v)
        print()
        print("profile (median seconds per step over the measured batches):")
        for k, v in prof.items():
            print(f"  {k:34s} {median(v):8.4f}")

    print(f"sga_step_vs_bare_ratio={ratio:.3f} padding_efficiency={pad_f[True][0]:.3f}")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
