"""Benchmark: evaluation scoring against a bare forward pass, and the full demo evaluation.

    python bench/eval.py                       # the prepared demo model, else embedded SmolLM2
    python bench/eval.py --model tiny          # seconds; a random tiny model (smoke mode)

(a) Scoring: the demo's forget rows and the retain rows the evaluation scores (the evenly
    spaced ``eval.max_retain_rows`` subset; ``--retain-rows 0`` = all 110), each with all its
    candidate answers (answer, paraphrase, 5 perturbed), through the library path
    (``sga_core.evaluation.score_qa_candidates`` with the evaluation's
    :func:`~sga_core.evaluation.qa_batches` groups -> ``sga_core.model.forward.batched_nll``:
    tokenise, collate, forward, per-sequence NLL);
(b) the same padded batches (same sequences, same order, same width; collated before the
    clock starts) through a bare ``model(input_ids=..., attention_mask=..., use_cache=False)``
    under ``torch.no_grad()``: the forward pass alone.
    The two are interleaved batch by batch (A,B then B,A, ...), because another process may
    share the CPU; tokens are real (non-pad) tokens in both.
(c) The wall time of the full demo evaluation (``sga_core.evaluation.evaluate_model``: forget
    10 rows, retain 40 of 110, real_authors 20, world_facts 20; scoring + 48-token greedy
    answers), model loading included, with the per-stage timings.
(d) With ``--protocols demo,tofu``: the demo evaluated under each protocol, the Results
    table's columns side by side and each evaluation's wall time (the TOFU protocol: 200-token
    answers, all 110 retain rows, the open-unlearning epsilons).

    python bench/eval.py --protocols demo,tofu --skip-full     # SmolLM2: the lead's run
    python bench/eval.py --model tiny --protocols demo,tofu --skip-full --max-new-tokens 8

The last line is machine-readable: ``eval_vs_bare_ratio=<x> demo_eval_s=<y>`` (plus
``protocol_<name>_s=<z>`` per protocol of ``--protocols``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEMO = ROOT / "assets" / "demo"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None,
                   help="model spec or folder (default: runs/demo-original/model when "
                        "prepared, else embedded:smollm2); 'tiny' = a random tiny model")
    p.add_argument("--reference", default=None,
                   help="retain reference for (c) (default: runs/demo-retain-ref when "
                        "prepared, else none)")
    p.add_argument("--batch-size", type=int, default=16,
                   help="sequences per scoring batch / prompts per generation batch")
    p.add_argument("--retain-rows", type=int, default=40,
                   help="retain rows in (a)/(b) and (c), evenly spaced (0 = all)")
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    p.add_argument("--skip-full", action="store_true", help="skip (c)")
    p.add_argument("--protocols", default="",
                   help="(d): evaluate under these protocols, comma-separated (demo,tofu)")
    p.add_argument("--protocol-new-tokens", type=int, default=None,
                   help="(d): answer length for every protocol (smoke runs only; default: "
                        "each protocol's own)")
    return p.parse_args(argv)


def protocol_table(spec: str, reference: str | None, protocols: list[str], tmp: Path,
                   batch_size: int, new_tokens: int | None) -> dict[str, float]:
    """(d): the demo under each protocol; prints the Results-table columns and times."""
    from sga_core.evaluation import EvalSettings, evaluate_model
    from sga_core.metrics.catalog import QA, table_columns

    cols = table_columns(QA, protocols)
    sets = {"real_authors": str(DEMO / "real_authors.jsonl"),
            "world_facts": str(DEMO / "world_facts.jsonl")}
    times, rows = {}, []
    for name in protocols:
        t0 = time.perf_counter()
        s = evaluate_model(spec, tmp / f"eval-{name}", str(DEMO / "forget.jsonl"),
                           str(DEMO / "retain.jsonl"), sets, reference, task="qa",
                           settings=EvalSettings(protocol=name, batch_size=batch_size,
                                                 max_new_tokens=new_tokens))
        times[name] = time.perf_counter() - t0
        m = s["metrics"]
        rows.append([name, f"{times[name]:.1f}", str(s["settings"]["max_new_tokens"]),
                     str(s["rows"]["retain"])]
                    + [("-" if m[c.name]["value"] is None else f"{m[c.name]['value']:.4g}")
                       for c in cols])
    head = ["protocol", "eval s", "new tokens", "retain rows"] + [c.label for c in cols]
    print("(d) the demo under each protocol (reference: "
          f"{reference or 'none: FQ needs runs/demo-retain-ref'})")
    print("    | " + " | ".join(head) + " |")
    print("    |" + "---|" * len(head))
    for r in rows:
        print("    | " + " | ".join(r) + " |")
    return times


def pick_model(spec: str | None, tmp: Path) -> str:
    if spec == "tiny":
        from sga_core.model.tiny import build_tiny_model

        return str(build_tiny_model(tmp / "tiny"))
    if spec:
        return spec
    from sga_core.runs.folder import RunFolder

    prepared = RunFolder(ROOT / "runs" / "demo-original").model_dir
    return str(prepared) if (prepared / "config.json").exists() else "embedded:smollm2"


def scoring_vs_bare(model, enc, rows, batch_size: int) -> dict:
    import torch

    from sga_core.evaluation import qa_batches, qa_candidates, score_qa_candidates
    from sga_core.model.encoding import collate

    groups = qa_batches(enc, rows, batch_size)

    def seqs_of(group):  # exactly the sequences of one scoring batch, in its order
        out = []
        for i in group:
            q = rows[i]["question"]
            out += [enc.qa(q, c, role="eval") for c in qa_candidates(rows[i])]
        return sorted(out, key=len)  # the forward loop's order (a stable sort by length)

    def lib(group):
        t = time.perf_counter()
        score_qa_candidates(model, enc, [rows[i] for i in group], rows_per_batch=len(group))
        return time.perf_counter() - t

    batches = {id(g): collate(seqs_of(g), enc.pad_id) for g in groups}  # built untimed

    def bare(group):
        b = batches[id(group)]
        t = time.perf_counter()
        with torch.no_grad():
            model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                  use_cache=False)
        return time.perf_counter() - t

    model.eval()
    lib(groups[0])  # warm-up
    bare(groups[0])
    t_lib = t_bare = 0.0
    tokens = padded = 0
    for j, g in enumerate(groups):
        seqs = seqs_of(g)
        tokens += sum(len(s) for s in seqs)
        padded += len(seqs) * max(len(s) for s in seqs)
        if j % 2 == 0:
            t_lib += lib(g)
            t_bare += bare(g)
        else:
            t_bare += bare(g)
            t_lib += lib(g)
    return {"batches": len(groups), "sequences": sum(len(seqs_of(g)) for g in groups),
            "tokens": tokens, "padding_efficiency": tokens / padded,
            "lib_s": t_lib, "bare_s": t_bare, "lib_tok_s": tokens / t_lib,
            "bare_tok_s": tokens / t_bare}


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if args.threads:
        torch.set_num_threads(args.threads)
    from sga_core.data import load_qa
    from sga_core.evaluation import (
        EvalSettings,
        evaluate_model,
        load_model_and_tokenizer,
        retain_subset,
    )
    from sga_core.model.encoding import Encoder
    from sga_core.runs.folder import EVAL_DIR, RunFolder

    with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp:
        tmp = Path(tmp)
        spec = pick_model(args.model, tmp)
        print(f"model: {spec}  torch threads: {torch.get_num_threads()}  "
              f"cores: {os.cpu_count()}")
        forget = load_qa(DEMO / "forget.jsonl")
        retain_all = load_qa(DEMO / "retain.jsonl")
        retain = [retain_all[i] for i in retain_subset(len(retain_all), args.retain_rows)]
        rows = forget + retain

        model, tok = load_model_and_tokenizer(spec)
        enc = Encoder(tok)
        r = scoring_vs_bare(model, enc, rows, args.batch_size)
        ratio = r["lib_tok_s"] / r["bare_tok_s"]
        print(f"(a) library scoring: {len(rows)} rows, {r['sequences']} sequences, "
              f"{r['batches']} batches, {r['tokens']} tokens (padding efficiency "
              f"{r['padding_efficiency']:.3f}): {r['lib_s']:.2f} s = {r['lib_tok_s']:.0f} tok/s")
        print(f"(b) bare forward, same batches: {r['bare_s']:.2f} s = "
              f"{r['bare_tok_s']:.0f} tok/s")
        print(f"    scoring / bare throughput ratio: {ratio:.3f}")
        del model

        demo_s = float("nan")
        if not args.skip_full:
            reference = args.reference
            ref_run = RunFolder(ROOT / "runs" / "demo-retain-ref")
            if reference is None and (ref_run.model_dir / "config.json").exists():
                reference = str(ref_run.path)
            settings = EvalSettings(max_new_tokens=args.max_new_tokens,
                                    max_retain_rows=args.retain_rows,
                                    batch_size=args.batch_size)
            t0, c0 = time.perf_counter(), time.process_time()
            summary = evaluate_model(
                spec, tmp / EVAL_DIR, str(DEMO / "forget.jsonl"), str(DEMO / "retain.jsonl"),
                {"real_authors": str(DEMO / "real_authors.jsonl"),
                 "world_facts": str(DEMO / "world_facts.jsonl")},
                reference, task="qa", settings=settings)
            demo_s = time.perf_counter() - t0
            cpu_s = time.process_time() - c0
            rows_n = summary["rows"]
            print(f"(c) full demo evaluation: {demo_s:.1f} s wall, {cpu_s:.1f} s CPU "
                  f"(rows {rows_n}, reference: {reference or 'none'} "
                  f"[{summary['reference'].get('source') or summary['reference'].get('reason')}])")
            print("    stages: " + ", ".join(f"{k}={v:.1f}s"
                                             for k, v in summary["timings"].items()))
            m = summary["metrics"]
            print("    " + " ".join(f"{k}={m[k]['value']:.3g}" for k in
                                    ("forget_rouge", "retain_rouge", "model_utility")
                                    if m[k]["value"] is not None))
        extra = ""
        if args.protocols:
            reference = args.reference
            ref_run = RunFolder(ROOT / "runs" / "demo-retain-ref")
            if reference is None and (ref_run.model_dir / "config.json").exists():
                reference = str(ref_run.path)
            times = protocol_table(spec, reference, [p.strip() for p in
                                                     args.protocols.split(",") if p.strip()],
                                   tmp, args.batch_size, args.protocol_new_tokens)
            extra = "".join(f" protocol_{k}_s={v:.1f}" for k, v in times.items())
    if os.getloadavg()[0] > (os.cpu_count() or 1):
        print(f"note: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: "
              "other processes share the CPU, so wall times are inflated")
    print(f"eval_vs_bare_ratio={ratio:.3f} demo_eval_s={demo_s:.1f}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
