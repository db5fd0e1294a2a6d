"""The paper's Table 1 in one command: every unlearning method at its defaults, plus SGA at the
paper's r values {-8, -4, -2, -0.8, -0.4, 0.2, 0.4}, on one prepared project (the demo by
default), all with the same training settings, seed and data order; each run is evaluated and
the table (FQ, MU, forget ROUGE-L, retain ROUGE-L, with the Original and Retained rows) is
printed. The runs form one sweep group ``paper-table-<time>``, which the Results page shows
as the same table.

    python bench/paper_table.py                      # the demo, its prepared SmolLM2 models
    python bench/paper_table.py --model tiny         # smoke mode: a tiny random model
    python bench/paper_table.py --project tofu --preset my.yaml --methods flat,npo-rt --r -0.8
    python bench/paper_table.py --methods ga,wga,satimp,sga --r -0.8 --seeds 3

Training settings come from ``--preset`` (default ``assets/presets/demo-sga.yaml``: lr 1e-5,
5 epochs, batch 2), with ``group_by_length`` off so that every method sees the same batches in
the same order (methods build units of different lengths). Methods that are the same method
under another name with the same defaults (``gd`` and ``graddiff``) run once. SGA and FLAT use
the project's normal answers when complete for K = 4, else "I don't know" answers; AltPO uses
alternates sampled from the Original by its recipe (generated once into the project folder,
``altpo_alternates-<model>.jsonl``, and reused). ``--seeds 3`` (or ``--seeds 0,1,2``) repeats
every run over those seeds, seed by seed, each row a seed group: the table then gives each
value as its mean with a 95% Student-t interval over seeds (Results shows the same).
Last line: ``runs=<n> completed=<n> total_s=<s>``.

``--stress ATTACKS`` (comma-separated; ``--stress`` alone: the ``stress`` command's defaults)
also stress-tests every run once it is evaluated, and the Retained model, with the
project's Original as the far end of each recovery (docs/stress-tests.md), and adds one
recovery column per attack result to the table; with ``--report GROUP --stress`` the table
shows the recoveries of whatever stress results the group's runs have.

Time (2-core CPU): the smoke mode makes 22 runs of 2 steps, each launched and evaluated as a
process, about 15 minutes on a quiet machine (42 on a busy one). With SmolLM2 on the demo, measured
on a quiet machine: 54 minutes for the 22 runs (training 33-177 s a run, about 60 s of
evaluation each; WHP reuses Task Vector's reinforced model and trains nothing), plus
`prepare --demo` (8 minutes) if the project is not prepared yet.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def method_plan(names: str, r_values: list[float]) -> list[tuple[str, dict]]:
    """(method, method_args) of every run: each distinct unlearning method at its defaults
    (in the paper's order), then SGA at each r."""
    from sga_core.methods import REGISTRY, method_names
    from sga_core.params import to_dict
    from sga_core.report.paper import ORDER

    wanted = [n for n in method_names(unlearning_only=True) if n != "sga"]
    if names != "all":
        chosen = [n.strip() for n in names.split(",") if n.strip()]
        unknown = sorted(set(chosen) - set(wanted) - {"sga"})
        if unknown:
            raise SystemExit(f"--methods: unknown {unknown}; known: {wanted + ['sga']}")
        wanted = [n for n in wanted if n in chosen]
        if "sga" not in chosen:
            r_values = []
    wanted.sort(key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER))
    plan, seen = [], set()
    for name in wanted:
        cls = REGISTRY[name]
        key = (cls.build_units, cls.unit_losses, cls.step, cls.finish,
               json.dumps(to_dict(cls.Config()), sort_keys=True))
        if key in seen:  # the same method under another name (gd = graddiff)
            continue
        seen.add(key)
        plan.append((name, {}))
    k = 4
    return plan + [("sga", {"r": r, "k": k}) for r in sorted(r_values, reverse=True)]


def smoke_setup(tmp: Path) -> tuple[str, dict]:
    """A tiny random model, and a demo project prepared from it in ``tmp`` (the workspace and
    runs folder are pointed there)."""
    from sga_core.model.tiny import build_tiny_model
    from sga_core.projects import create_demo_project
    from sga_core.projects.prepare import prepare

    os.environ["SGA_WORKSPACE"] = str(tmp / "workspace")
    os.environ["SGA_RUNS_DIR"] = str(tmp / "runs")
    model = build_tiny_model(tmp / "tiny")
    project = create_demo_project()
    print(f"smoke mode: tiny model {model}, project {project.path}", flush=True)
    prepare(str(project.forget_path), str(project.retain_path), model=str(model),
            name=project.name, training={"max_steps": 3, "lr": 1e-3, "batch_size": 8},
            eval_sets={k: str(v) for k, v in project.eval_sets().items()}, echo=lambda m: None)
    return project.name, {"max_steps": 2, "lr": 1e-3}


SMOKE_EVAL = {"max_new_tokens": 8, "max_retain_rows": 10}  # smoke mode: short answers


def normals_for(project) -> tuple[str, str]:
    """The project's normal answers when complete for K = 4, else generated IDK ones."""
    from sga_core.normals.idk import idk_normals

    table = project.normals()
    n = len(project.forget())
    if table is not None and table.k >= 4 and not table.problems(n):
        return str(project.normals_path), "the project's normal answers"
    path = project.path / "idk_normals.jsonl"
    idk_normals(n, 4).save(path)
    return str(path), "generated 'I don't know' answers (the project's table is incomplete)"


def seed_group(group: str, method: str, margs: dict) -> str:
    """The seed group of one row's runs (``group`` in config.yaml: Results pools them)."""
    tail = "-".join(f"{k}{v:g}" if isinstance(v, float) else f"{k}{v}"
                    for k, v in sorted(margs.items()))
    return f"{group}-{method}" + (f"-{tail}" if tail else "")


def altpo_alternates(project, original, smoke: bool) -> str:
    """AltPO's alternate answers for ``project``'s forget rows: its recipe (5 samples a row
    from the Original at temperature 1, its own prompt; docs/guide/cli.md), generated once
    into the project's folder and reused while the Original is the same."""
    import subprocess

    from sga_core.data.normal_table import NormalTable

    out = project.path / f"altpo_alternates-{Path(original).name}.jsonl"
    if out.exists():
        return str(out)
    tokens = "8" if smoke else "200"
    cmd = [sys.executable, "-m", "sga_core", "normals", "--backend", "local", "--model",
           str(original), "--template", "altpo_alternate", "--temperature", "1", "--top-p",
           "1", "--max-new-tokens", tokens, "--forget", str(project.forget_path), "--k", "6",
           "--out", str(out)]
    print("generating AltPO's alternates: " + " ".join(cmd[1:]), flush=True)
    t0 = time.time()
    subprocess.run(cmd, check=True, cwd=ROOT)
    table = NormalTable.load(out)
    sources = ",".join(sorted({a.source for a in table.answers}))
    print(f"alternates: {len(table.answers)} answers, K = {table.k}, source {sources}, in "
          f"{time.time() - t0:.0f} s: {out}", flush=True)
    return str(out)


def finished_runs(root: Path, group: str) -> dict[tuple[str, int | None], dict]:
    """The runs of ``group`` that completed and were evaluated, by their table label and
    seed: what ``--resume`` keeps (the newest where a label and seed appear twice)."""
    from sga_core.report.paper import paper_label
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.listing import list_runs
    from sga_core.runs.status import read_run

    out: dict[tuple[str, int | None], dict] = {}
    for r in reversed(list_runs(root)):  # oldest first: the newest wins
        if r.get("sweep") != group or r["state"] != "completed" or \
                r.get("eval_state") != "completed":
            continue
        label = paper_label(r["method"], RunFolder(r["path"]).config().method_args)
        st = read_run(Path(r["path"]))
        out[(label, r.get("seed"))] = {
            "run": label, "seed": r.get("seed"), "run_id": r["run_id"], "state": "completed",
            "eval_state": "completed", "train_s": st.get("elapsed_s"), "wall_s": None,
            "error": None, "path": r["path"]}
    return out


def settings_differ(run_dir: Path, cfg) -> list[str]:
    """What a kept run was trained with differently from the run ``cfg`` would make: the
    model, the method's settings, the training settings, or the rows of its data (compared
    by content with the run folder's data snapshot). Empty: the run stands for ``cfg``."""
    from sga_core.params import to_dict
    from sga_core.runs.create import data_hashes
    from sga_core.runs.folder import RunFolder

    old = RunFolder(run_dir).config()
    differ = [name for name, a, b in (
        ("model", old.model, cfg.model),
        ("method settings", to_dict(old.method_args) if not isinstance(old.method_args, dict)
         else old.method_args, cfg.method_args),
        ("training settings", to_dict(old.training), to_dict(cfg.training))) if a != b]
    # the run folder's own data snapshot, hashed now (a manifest written before the normals'
    # hash left out their timestamps would call the same answers different)
    snap, mine = data_hashes(old), data_hashes(cfg)
    differ += [f"{part} data" for part in ("forget", "retain", "normals")
               if snap.get(part) != mine.get(part)]
    return differ


def main(argv=None) -> int:
    from sga_core.report.paper import PAPER_R

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--project", default="demo", help="a prepared project (default: demo)")
    p.add_argument("--model", default="prepared", choices=("prepared", "tiny"),
                   help="prepared: the project's prepared original model (run `python -m "
                        "sga_core prepare --demo` first); tiny: smoke mode in a temporary "
                        "folder with a tiny random model")
    p.add_argument("--preset", default=str(ROOT / "assets/presets/demo-sga.yaml"),
                   help="YAML whose 'training' section every run uses")
    p.add_argument("--methods", default="all", help="comma list (sga = the r values), or all")
    p.add_argument("--r", default=",".join(f"{r:g}" for r in PAPER_R),
                   help="SGA's r values (default: the paper's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", default="",
                   help="repeat every run over seeds: a count (3 = seed, seed+1, seed+2) or "
                        "a list (0,1,2); each row is then the mean with its 95%% interval "
                        "over seeds (default: the one --seed)")
    p.add_argument("--max-steps", type=int, default=0, help="override the preset (0 = keep)")
    p.add_argument("--out", help="also write the table and timings as JSON here")
    p.add_argument("--report", metavar="GROUP",
                   help="only print the table of GROUP's runs evaluated so far (runs nothing)")
    p.add_argument("--resume", metavar="GROUP",
                   help="continue an interrupted table: runs of GROUP (paper-table-<time>) "
                        "that completed and were evaluated are kept, the rest are run into "
                        "the same group (with everything done, it only prints the table)")
    p.add_argument("--stress", nargs="?", const="default", metavar="ATTACKS",
                   help="also stress-test each evaluated run (and the Retained model) with "
                        "these attacks (comma list; alone: the stress command's defaults) "
                        "and add their recoveries to the table")
    p.add_argument("--backend", choices=("local", "slurm"),
                   help="local: run here one after another and print the table; slurm: "
                        "submit every run as one job array (the workspace's cluster profile) "
                        "and return; `--report GROUP` prints the table once they are "
                        "evaluated (default: the cluster profile's backend)")
    args = p.parse_args(argv)
    from sga_core.params import parse_seeds

    try:
        args.seeds = parse_seeds(args.seeds, args.seed)
    except ValueError as exc:
        raise SystemExit(f"--seeds: {exc}") from None
    if args.backend is None:
        from sga_core.runs.slurm.profile import load_profile

        args.backend = load_profile().backend
    if args.backend == "slurm" and args.model == "tiny":
        raise SystemExit("--backend slurm: smoke mode's temporary folder (its model and runs) "
                         "is gone when this command returns; use a prepared project")
    if args.stress:
        from sga_core.stress.run import parse_attacks

        args.stress = parse_attacks(args.stress)  # "default": the stress command's
    if args.report:
        return report(args.project, args.report, bool(args.stress))
    if args.stress and args.backend == "slurm":
        raise SystemExit("--stress with --backend slurm: the runs are not trained yet when "
                         "this command returns; once they are evaluated, stress-test them "
                         "(the stress command, or Results' Does it hold?) and print the "
                         "table with `--report GROUP --stress`")
    r_values = [float(v) for v in args.r.split(",") if v.strip()]
    plan = method_plan(args.methods, r_values)
    with tempfile.TemporaryDirectory(prefix="paper-table-") as tmp:
        return run(args, plan, Path(tmp))


def report(name: str, group: str, stress: bool = False) -> int:
    """Print the table of ``group``'s runs evaluated so far (the Original and Retained rows
    included; ``stress``: with their stress recoveries); its last line says how many of the
    plan's rows it has."""
    from sga_core.projects import load_project
    from sga_core.report.paper import PAPER_R, add_stress_columns, format_table, paper_table
    from sga_core.report.table import results_table
    from sga_core.runs.folder import runs_root

    project, root = load_project(name), runs_root()
    rows = paper_table(results_table(project, root, project.kind), root, project.kind, group)
    if not rows:
        raise SystemExit(f"--report {group}: no evaluated run of that group in {root}")
    extra = add_stress_columns(rows, root) if stress else []
    print("\n" + format_table(rows, project.kind, extra) + "\n")
    planned = len(method_plan("all", list(PAPER_R)))
    runs = [r for r in rows if r["run"] not in ("Original", "Retained")]
    print(f"group={group} rows={len(runs)} of {planned} planned")
    return 0


def run(args, plan, tmp: Path) -> int:
    from sga_core.config import TrainConfig
    from sga_core.fileio import load_yaml
    from sga_core.projects import create_demo_project, list_projects, load_project
    from sga_core.projects.training import default_eval, prepared_model
    from sga_core.report.paper import (
        GROUP_PREFIX,
        add_stress_columns,
        format_table,
        paper_label,
        paper_table,
    )
    from sga_core.report.table import results_table
    from sga_core.runs.create import create_run
    from sga_core.runs.folder import runs_root
    from sga_core.runs.launch import run_foreground
    from sga_core.runs.listing import list_runs

    t_all = time.time()
    training = (load_yaml(Path(args.preset).read_text()) or {}).get("training", {})
    name, eval_extra = args.project, {}
    if args.model == "tiny":
        name, extra = smoke_setup(tmp)
        training, eval_extra = {**training, **extra}, SMOKE_EVAL
    elif name not in list_projects():
        if name != "demo":
            raise SystemExit(f"no project {name!r} in the workspace")
        create_demo_project()
    project, root = load_project(name), runs_root()
    original = prepared_model(project, root)
    if original is None:
        raise SystemExit(f"project {name!r} has no prepared original model in {root}: run "
                         f"`python -m sga_core prepare --demo` (or the Train page's Prepare)")
    training = {**training, "group_by_length": False}
    if args.max_steps:
        training["max_steps"] = args.max_steps
    normals, about = normals_for(project)
    if any(m == "altpo" for m, _ in plan):
        alternates = altpo_alternates(project, original, args.model == "tiny")
        about += f"; AltPO's alternates: {alternates}"
    group = args.resume or f"{GROUP_PREFIX}{time.strftime('%Y%m%d-%H%M%S')}"
    done_runs = finished_runs(root, group) if args.resume else {}
    if args.resume and not any(r.get("sweep") == group for r in list_runs(root)):
        raise SystemExit(f"--resume {group}: no run of that group in {root} (the group is "
                         "the paper-table-<time> name the first run printed)")
    print(f"{len(plan)} runs x seeds {args.seeds} as group {group} from {original}; "
          f"normals: {about}; training: "
          f"{json.dumps(training)}" + (f"; {len(done_runs)} done before" if args.resume
                                       else ""), flush=True)
    timings, for_slurm = [], []
    # seed by seed: an interrupted table has every row at its first seeds
    for seed, (method, margs) in [(sd, m) for sd in args.seeds for m in plan]:
        data = {"task": project.kind, "forget": str(project.forget_path),
                "normals": alternates if method == "altpo" else normals}
        if project.retain_path.exists():
            data["retain"] = str(project.retain_path)
        cfg = TrainConfig.from_dict({
            "model": str(original), "method": method, "method_args": margs, "data": data,
            "training": {**training, "seed": seed}, "sweep": group,
            "group": seed_group(group, method, margs) if len(args.seeds) > 1 else None,
            "eval": {**default_eval(project, root), **eval_extra},
            "notes": "bench/paper_table.py"})
        label = paper_label(method, cfg.method_args)
        if (label, seed) in done_runs:  # --resume: done and evaluated in this group
            kept = done_runs[(label, seed)]
            differ = settings_differ(Path(kept["path"]), cfg)
            if not differ:
                rec = {k: v for k, v in kept.items() if k != "path"} | {"reused": True}
                timings.append(rec)
                print(json.dumps(rec), flush=True)
                continue
            print(f"{label}: {kept['run_id']} was trained with other {', '.join(differ)}; "
                  "running it again", flush=True)
        if args.backend == "slurm":
            for_slurm.append(cfg)
            continue
        run_dir = create_run(cfg, root)
        t0 = time.time()
        st = run_foreground(run_dir, echo=lambda m: None)  # evaluated per its config, once
        rec = {"run": label, "seed": seed, "run_id": run_dir.name,
               "state": st.get("state"), "eval_state": st.get("eval_state"),
               "train_s": st.get("elapsed_s"), "wall_s": round(time.time() - t0, 1),
               "error": st.get("error")}
        if args.stress and st.get("eval_state") == "completed":
            rec["stress_s"] = stress(run_dir, args.stress, original)
        timings.append(rec)
        print(json.dumps(rec), flush=True)
    if args.backend == "slurm":
        return submitted(for_slurm, root, group)
    rows = paper_table(results_table(project, root, project.kind), root, project.kind, group)
    extra = []
    if args.stress:
        retained = next((r for r in rows if r["run"] == "Retained"), None)
        if retained is not None:  # relearning it: how fast the forget set is learned anew
            print(json.dumps({"run": "Retained", "run_id": retained["run_id"],
                              "stress_s": stress(root / retained["run_id"], args.stress,
                                                 original)}), flush=True)
        extra = add_stress_columns(rows, root)
    print("\n" + format_table(rows, project.kind, extra) + "\n")
    total = round(time.time() - t_all)
    if args.out:
        Path(args.out).write_text(json.dumps({"group": group, "table": rows,
                                              "runs": timings, "total_s": total}, indent=1))
    done = sum(t["state"] == "completed" and t["eval_state"] == "completed" for t in timings)
    print(f"runs={len(timings)} completed={done} total_s={total}")
    return 0 if done == len(timings) else 1


def stress(run_dir: Path, attacks: list[str], original) -> float | str:
    """Stress-test one run folder with ``attacks``, the project's Original as the far end of
    each recovery; the seconds it took, or why it failed (the table goes on)."""
    from sga_core.evaluation.common import EvalError
    from sga_core.params import ConfigError
    from sga_core.stress.run import stress_run

    t0 = time.time()
    try:
        stress_run(run_dir, attacks, overrides={"original": str(original)})
    except (EvalError, ConfigError, OSError) as exc:
        return f"failed: {exc}"
    return round(time.time() - t0, 1)


def submitted(cfgs: list, root: Path, group: str) -> int:
    """Send the table's runs still to do to SLURM as one job array (evaluated in their jobs);
    the table is printed later by ``--report GROUP``. WHP's jobs may start before Task
    Vector's has built the reinforced model they would reuse: each then builds its own."""
    from sga_core.report.paper import paper_label
    from sga_core.runs import status as run_status
    from sga_core.runs.slurm.backend import submit

    made = submit(cfgs, root, name=group) if cfgs else []
    for cfg, run_dir in zip(cfgs, made):
        print(json.dumps({"run": paper_label(cfg.method, cfg.method_args),
                          "run_id": run_dir.name,
                          "slurm_job_id": run_status.read_run(run_dir)["slurm_job_id"]}),
              flush=True)
    print(f"submitted={len(made)} group={group}: `python bench/paper_table.py --report "
          f"{group}` prints the table once they are evaluated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
