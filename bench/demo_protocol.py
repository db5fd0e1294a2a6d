"""The demo protocol end to end with SmolLM2 (the figures the issues ask to report):

1. prepare: fine-tune the original (forget + retain) and the retain reference; time and
   answer NLL on forget and retain rows;
2. SGA runs at r in {0, -0.8, 0.4} (K = 4, "I don't know" normals, assets/presets/demo-sga.yaml):
   forget/retain NLL before and after;
3. the per-sample r* distribution on the original, and an adaptive-r run;
4. the evaluation table (Original, Retained, each run).

Runs go to ./runs and the project to ./workspace/demo, so the workbench shows them after.
Takes about 40 minutes on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--r", default="0,-0.8,0.4")
    p.add_argument("--skip-prepare", action="store_true")
    p.add_argument("--no-adaptive", action="store_true")
    args = p.parse_args(argv)

    from sga_core.config import TrainConfig
    from sga_core.fileio import load_yaml
    from sga_core.methods.sga.rstar import run_analysis
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project, list_projects, load_project
    from sga_core.projects.prepare import prepare
    from sga_core.projects.training import default_eval, original_run_id, reference_run_id
    from sga_core.runs.create import create_run
    from sga_core.runs.folder import RunFolder, runs_root
    from sga_core.runs.launch import run_foreground
    from sga_core.runs.status import read_run

    root = runs_root()
    project = load_project("demo") if "demo" in list_projects() else create_demo_project()
    if project.normals() is None or not project.normals().is_complete(10):
        project.save_normals(idk_normals(len(project.forget()), 4), "generate idk")
    report: dict = {}
    t_all = time.time()

    if not args.skip_prepare:
        t0 = time.time()
        res = prepare(str(project.forget_path), str(project.retain_path), name=project.name,
                      runs_dir=root, eval_sets={k: str(v) for k, v in
                                                project.eval_sets().items()})
        report["prepare_total_s"] = round(time.time() - t0, 1)
        for run_id in (original_run_id(project), reference_run_id(project)):
            st = read_run(root / run_id)
            report[run_id] = {"state": res.get(run_id, {}).get("state"),
                              "train_s": st.get("elapsed_s"),
                              "nll_before": st.get("nll_before"),
                              "nll_after": st.get("nll_after")}
        print(json.dumps({k: report[k] for k in report}, indent=1), flush=True)
    original = RunFolder.of(original_run_id(project), root).model_dir

    t0 = time.time()
    rs = run_analysis(str(original), project.forget(), project.normals(), "qa", 4)
    report["rstar"] = {"elapsed_s": round(time.time() - t0, 1), "summary": rs["summary"],
                       "per_row": [r["r_star"] for r in rs["rows"]]}
    print(json.dumps(report["rstar"], indent=1), flush=True)

    preset = load_yaml((ROOT / "assets/presets/demo-sga.yaml").read_text())
    plan = [(float(r), False) for r in args.r.split(",")]
    if not args.no_adaptive:
        plan.append((-0.8, True))
    group = f"demo-protocol-{time.strftime('%Y%m%d-%H%M%S')}"
    for r, adaptive in plan:
        margs = {**preset["method_args"], "r": r}
        if adaptive:
            margs.update(adaptive=True, adaptive_every=1, r_min=-5.0, r_max=1.0)
        cfg = TrainConfig.from_dict({
            "model": str(original), "method": "sga", "method_args": margs,
            "data": {"forget": str(project.forget_path), "retain": str(project.retain_path),
                     "normals": str(project.normals_path)},
            "training": preset["training"], "sweep": None if adaptive else group,
            "eval": default_eval(project, root),
            "notes": "demo protocol" + (" (adaptive r)" if adaptive else ""),
        })
        run_dir = create_run(cfg, root)
        t0 = time.time()
        st = run_foreground(run_dir, echo=lambda m: None)
        before, after = st.get("nll_before") or {}, st.get("nll_after") or {}
        key = f"sga r={r:g}" + (" adaptive" if adaptive else "")
        report[key] = {
            "run_id": run_dir.name, "state": st.get("state"), "wall_s": round(time.time() - t0),
            "train_s": st.get("elapsed_s"), "nll_before": before, "nll_after": after,
            "forget_ratio": after.get("forget", 0) / before["forget"] if before else None,
            "retain_ratio": after.get("retain", 0) / before["retain"] if before else None,
            "eval_state": st.get("eval_state")}
        print(key, json.dumps(report[key]), flush=True)

    from sga_core.report.table import results_table

    table = results_table(project, root)
    report["table"] = table
    cols = ["run", "r", "FQ", "MU", "forget ROUGE-L", "retain ROUGE-L", "collapsed"]
    print("\n" + " | ".join(cols))
    for row in table:
        print(" | ".join("-" if row.get(c) is None else
                         (f"{row[c]:.4g}" if isinstance(row[c], float) else str(row[c]))
                         for c in cols))
    report["total_s"] = round(time.time() - t_all)
    (ROOT / "bench" / "demo_protocol_result.json").write_text(json.dumps(report, indent=1))
    print(f"total {report['total_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
