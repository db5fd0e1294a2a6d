"""Benchmark: a MUSE-protocol evaluation of SmolLM2 on the CPU, on the demo's text sets
(forget, retain, holdout, forget_qa, retain_qa), whole and with a row limit.

    python bench/muse_eval.py                    # every row (the MUSE protocol as published)
    python bench/muse_eval.py --max-rows 5       # eval.max_rows: 5 rows of every set
    python bench/muse_eval.py --model tiny       # smoke mode

Prints the seconds of each stage (the summary's timings), the rows evaluated ("n of N")
and, with ``--progress``, every progress report with its time, so the gaps between reports
(how long a stage shows no progress) can be read. Runs on older checkouts too (without
``--max-rows``). The last line: ``muse_eval_s=<s> rows=<n> max_gap_s=<s>``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEMO = ROOT / "assets" / "demo"

from sga_core.runs.offline import set_offline_defaults  # noqa: E402

set_offline_defaults()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="embedded:smollm2")
    p.add_argument("--max-rows", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--progress", action="store_true")
    args = p.parse_args(argv)
    from sga_core.evaluation import EvalSettings, evaluate_model

    spec = args.model
    if spec == "tiny":
        from sga_core.model.tiny import build_tiny_model

        spec = str(build_tiny_model(Path(tempfile.mkdtemp()) / "tiny"))
    kw = {"max_rows": args.max_rows} if args.max_rows else {}
    st = EvalSettings(protocol="muse", batch_size=args.batch_size, device="cpu", **kw)
    sets = {n: str(DEMO / f"text_{n}.jsonl") for n in ("holdout", "forget_qa", "retain_qa")}
    t0 = time.time()
    last = [t0, None]
    gaps: dict[str, float] = {}

    def progress(stage, done, total):
        now = time.time()
        if last[1] == stage:
            gaps[stage] = max(gaps.get(stage, 0.0), now - last[0])
        last[0], last[1] = now, stage
        if args.progress:
            print(f"  {now - t0:7.1f}s  {stage} {done}/{total}", flush=True)

    with tempfile.TemporaryDirectory() as out:
        summ = evaluate_model(spec, out, str(DEMO / "text_forget.jsonl"),
                              str(DEMO / "text_retain.jsonl"), sets, task="text",
                              settings=st, progress=progress)
    total = time.time() - t0
    of = summ.get("rows_of") or {}
    print(f"\n{args.model}, MUSE protocol, batch {args.batch_size}, "
          f"max_rows {args.max_rows or 'all'}")
    for name, n in (summ.get("rows") or {}).items():
        print(f"  {name:<10} {n} of {of.get(name, n)} rows")
    for k, v in (summ.get("timings") or {}).items():
        print(f"  {k:<16} {v:8.1f}")
    print(f"  longest wait between two reports of one stage: "
          f"{max(gaps.values()) if gaps else 0:.1f} s "
          f"({max(gaps, key=gaps.get) if gaps else '-'})")
    print(f"muse_eval_s={total:.1f} rows={sum((summ.get('rows') or {}).values())} "
          f"max_gap_s={max(gaps.values()) if gaps else 0:.1f}")


if __name__ == "__main__":
    main()
