"""The demo's text sets end to end with SmolLM2: the figures of text unlearning
(docs/measurability.md).

1. prepare (text settings: ``prepare_defaults("text")``): the Original (forget + retain) and
   the Retained (retain only), each evaluated; the time it takes and the memorisation
   reached (forget NLL before/after, the Original against the Retained on the forget side);
2. normal continuations by retrieval (the nearest retain passages, with their cosine);
3. GA and SGA r = -0.8 (K = 4) from the Original, each evaluated;
4. the MUSE columns (VerbMem, KnowMem forget/retain, PrivLeak, PPL) of the four models, each
   with its 95% bootstrap interval over rows, and whether forgetting can be measured.

Runs go to a fresh folder (``--runs``, default a temporary one). The last line is
``prepare_s=.. measurable=.. verbmem_original=.. verbmem_retained=..``. ``--model tiny``:
a random tiny model, a smoke test whose numbers mean nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COLUMNS = (("forget_verbmem", "VerbMem"), ("forget_knowmem", "KnowMem f"),
           ("retain_knowmem", "KnowMem r"), ("privleak", "PrivLeak"),
           ("holdout_perplexity", "PPL"))


def fmt(row: dict | None) -> str:
    if not row or row.get("value") is None:
        return "-"
    lo, hi = row.get("lo"), row.get("hi")
    iv = f" [{lo:.3g}, {hi:.3g}]" if lo is not None and hi is not None else ""
    return f"{row['value']:.3g}{iv}"


def train(cfg: dict, root: Path) -> tuple[Path, dict, float]:
    from sga_core.config import TrainConfig
    from sga_core.runs.create import create_run
    from sga_core.runs.launch import run_foreground

    run_dir = create_run(TrainConfig.from_dict(cfg), root)
    t0 = time.time()
    st = run_foreground(run_dir, echo=lambda m: None)
    return run_dir, st, time.time() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="embedded:smollm2", help="a model spec, or 'tiny'")
    p.add_argument("--runs", default=None, help="runs folder (default: a temporary one)")
    p.add_argument("--epochs", type=float, default=None, help="prepare epochs (default: "
                                                              "the text default)")
    p.add_argument("--unlearn-epochs", type=float, default=5.0)
    p.add_argument("--normals", choices=["retrieval", "idk"], default="retrieval")
    args = p.parse_args(argv)

    from sga_core.assets import DEMO_DIR, demo_eval_sets
    from sga_core.data import load_dataset
    from sga_core.normals import generate_normals
    from sga_core.normals.idk import idk_normals
    from sga_core.projects.prepare import prepare, prepare_defaults
    from sga_core.report.measurable import measurability
    from sga_core.report.uncertainty import run_intervals
    from sga_core.runs.prepared_ids import original_id, reference_id

    root = Path(args.runs or tempfile.mkdtemp(prefix="text-demo-"))
    model = args.model
    if model == "tiny":
        from sga_core.model.tiny import build_tiny_model

        model = str(build_tiny_model(root / "tiny-model"))
    forget, retain = DEMO_DIR / "text_forget.jsonl", DEMO_DIR / "text_retain.jsonl"
    sets = demo_eval_sets("text")
    training = prepare_defaults("text")
    if args.epochs is not None:
        training["epochs"] = args.epochs
    print(f"runs: {root}\nprepare settings: {json.dumps(training)}", flush=True)

    t0 = time.time()
    res = prepare(str(forget), str(retain), model=model, name="textdemo", runs_dir=root,
                  task="text", eval_sets=sets, training=training, echo=lambda m: None)
    prepare_s = time.time() - t0
    orig, ref = root / original_id("textdemo"), root / reference_id("textdemo")
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.status import read_run

    for name, d in (("Original", orig), ("Retained", ref)):
        st = read_run(d)
        print(f"{name}: {res[d.name]['state']}, eval {res[d.name].get('eval_state')}, "
              f"train {st.get('elapsed_s')} s, NLL before {st.get('nll_before')} "
              f"after {st.get('nll_after')}", flush=True)
    print(f"prepare (both models, with their evaluations): {prepare_s:.0f} s", flush=True)

    forget_rows = load_dataset(forget, kind="text").rows
    if args.normals == "retrieval":
        normals = generate_normals("retrieval", forget_rows, "text", 4,
                                   retain_rows=load_dataset(retain, kind="text").rows).table
    else:
        normals = idk_normals(len(forget_rows), 4)
    normals_path = root / "normals.jsonl"
    normals.save(normals_path)
    print("normals: " + json.dumps(dict(sorted(
        {a.source: 0 for a in normals.answers}.items()))), flush=True)

    runs = {"Original": orig, "Retained": ref}
    for label, method, margs in (("GA", "ga", {}), ("SGA r=-0.8", "sga", {"r": -0.8, "k": 4})):
        cfg = {"model": str(RunFolder(orig).model_dir), "method": method, "method_args": margs,
               "data": {"task": "text", "forget": str(forget), "retain": str(retain),
                        **({"normals": str(normals_path)} if method == "sga" else {})},
               "training": {"lr": 1e-5, "epochs": args.unlearn_epochs, "batch_size": 2,
                            "seed": 0, "max_length": training["max_length"],
                            "log_every": 1},
               "eval": {"enabled": True, "sets": sets, "reference": str(ref),
                        "protocol": "demo"},
               "notes": f"text demo: {label}"}
        run_dir, st, wall = train(cfg, root)
        runs[label] = run_dir
        print(f"{label}: {st.get('state')}, eval {st.get('eval_state')}, {wall:.0f} s",
              flush=True)

    print("\nmodel | " + " | ".join(c for _, c in COLUMNS))
    for label, d in runs.items():
        try:
            rows = {r["metric"]: r for r in run_intervals(d)}
        except Exception as exc:  # noqa: BLE001 - a bench prints what it can
            print(f"{label} | cannot read its evaluation: {exc}")
            continue
        print(f"{label} | " + " | ".join(fmt(rows.get(m)) for m, _ in COLUMNS))
    verdict = measurability(orig, ref)
    print("\nOriginal - Retained on the forget side (95% paired bootstrap):")
    for r in verdict["rows"]:
        print(f"  {r['label']}: {r['diff']:.3g} [{r['lo']:.3g}, {r['hi']:.3g}]"
              f" separates={r['separates']}")
    print(f"verdict: measurable={verdict['measurable']} {verdict['message'] or ''}")
    by = {r["metric"]: r for r in verdict["rows"]}
    vo = (by.get("forget_verbmem") or {}).get("original")
    vr = (by.get("forget_verbmem") or {}).get("retained")
    print(f"prepare_s={prepare_s:.0f} measurable={verdict['measurable']} "
          f"verbmem_original={vo if vo is None else round(vo, 3)} "
          f"verbmem_retained={vr if vr is None else round(vr, 3)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
