"""The layer view of one followed token across models: where an unlearned model still holds
a forgotten answer token (the demo's " French"). For the Original, the Retained model and
each run given, the forget row's answer is read at every layer by the logit lens (the same
code as the evaluation's ``eval/layers.jsonl``: :func:`sga_core.model.lens.row_layer_table`)
and the followed token's output probability and rank, its first top-1 layer, and its rank at
a few layers are printed; runs over several seeds are also pooled (mean over seeds).

    python bench/layer_view.py --group paper-table-20261128-022545 --methods ga,sga
    python bench/layer_view.py RUN_ID [RUN_ID ...] --row 7 --token French

It reads the run folders' models and their evaluation settings, loads each model once, and
writes nothing (a run evaluated since the layer view landed has the same table in
``eval/layers.jsonl``: ``python -m sga_core probe RUN --layers --token French``). Last line:
``models=<n> total_s=<s>``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def token_position(tokens: list[str], token: str) -> int:
    """The first answer token that is ``token`` (leading space and case ignored)."""
    want = token.strip().lower()
    for i, t in enumerate(tokens):
        if t.strip().lower() == want:
            return i
    raise SystemExit(f"--token {token!r}: not one of the answer's tokens {tokens}")


def layer_row(run_dir: Path, row: int, token: str, device: str = "cpu") -> dict:
    """The followed token's view in one run folder's model."""
    import torch

    from sga_core.data import load_dataset
    from sga_core.evaluation.run import load_model_and_tokenizer
    from sga_core.evaluation.settings import settings_from_config
    from sga_core.model.lens import row_layer_table
    from sga_core.runs.folder import RunFolder

    run = RunFolder(run_dir)
    cfg = run.config()
    _, st, _ = settings_from_config(cfg, {}).resolve()
    forget = load_dataset(str(cfg.resolve(cfg.data.forget)), cfg.data.task).rows
    m, tok = load_model_and_tokenizer(str(run.model_dir), dtype=st.dtype, device=device)
    t0 = time.time()
    with torch.no_grad():
        (rec,) = row_layer_table(m, st.encoder(tok, m), [forget[row]], "qa", device=device)
    j = token_position(rec["tokens"], token)
    ranks = [layer[j] for layer in rec["ranks"]]
    probs = [layer[j] for layer in rec["probs"]]
    top1 = [i + 1 for i, r in enumerate(ranks) if r == 1]
    return {"run": run_dir.name, "method": cfg.method, "seed": cfg.training.seed,
            "layers": len(ranks), "p_out": probs[-1], "rank_out": ranks[-1],
            "first_top1": top1[0] if top1 else None, "top1_layers": top1, "ranks": ranks,
            "s": round(time.time() - t0, 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="*", help="run ids (besides the group's)")
    p.add_argument("--group", help="a sweep group (bench/paper_table.py's paper-table-<time>)")
    p.add_argument("--methods", default="", help="of the group, only these methods")
    p.add_argument("--project", default="demo", help="its Original and Retained rows")
    p.add_argument("--row", type=int, default=7, help="forget row (demo: 7, Marchetti's "
                                                      "'lush French literary style')")
    p.add_argument("--token", default="French")
    p.add_argument("--out", help="also write the rows as JSON here")
    args = p.parse_args(argv)
    from sga_core.projects import load_project
    from sga_core.projects.training import prepared_model, prepared_reference
    from sga_core.runs.folder import runs_root
    from sga_core.runs.listing import list_runs

    t_all = time.time()
    root = runs_root()
    project = load_project(args.project)
    # the Original's and the Retained model's run folders (their model/ inside)
    dirs = [Path(d).parent if Path(d).name == "model" else Path(d)
            for d in (prepared_model(project, root), prepared_reference(project, root)) if d]
    wanted = {m.strip() for m in args.methods.split(",") if m.strip()}
    if args.group:
        dirs += [Path(r["path"]) for r in reversed(list_runs(root))
                 if r.get("sweep") == args.group and r["state"] == "completed"
                 and (not wanted or r["method"] in wanted)]
    dirs += [root / r for r in args.runs]
    rows = []
    for d in dirs:
        rec = layer_row(d, args.row, args.token)
        rows.append(rec)
        print(json.dumps({k: v for k, v in rec.items() if k != "ranks"}), flush=True)
    n = rows[0]["layers"] if rows else 0
    marks = sorted({1, n // 4, n // 2, 3 * n // 4, n} - {0})
    print(f"\n{args.token!r} in forget row {args.row}, the logit lens at each layer "
          f"(rank 1 = top-1):\n")
    print("| model | seed | p (output) | rank (output) | first top-1 layer | top-1 at layers | "
          + " | ".join(f"rank @ {k}" for k in marks) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(marks))
    for r in rows:
        spans = ", ".join(str(x) for x in r["top1_layers"]) or "none"
        print(f"| {r['run']} | {r['seed']} | {r['p_out']:.4f} | {r['rank_out']} | "
              f"{r['first_top1'] or '-'} | {spans} | "
              + " | ".join(str(r["ranks"][k - 1]) for k in marks) + " |")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    print(f"models={len(rows)} total_s={round(time.time() - t_all)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
