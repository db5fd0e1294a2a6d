"""``train``, ``prepare`` and ``rstar``: runs and the choice of r (the Train and Choose r pages)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sga_core.assets import DEMO_DIR, DEMO_EVAL_SETS, demo_eval_sets
from sga_core.cli.flags import (
    PROTOCOL_CHOICES,
    add_dataclass_flags,
    add_map_flag,
    apply_eval_flags,
    chosen_method,
    collect,
    field_map,
    parse_sets,
)
from sga_core.config import LaunchConfig, TrainingArgs, name_problem
from sga_core.methods import REGISTRY, method_names
from sga_core.model.loading import is_model_folder
from sga_core.params import ConfigError
from sga_core.runs.backends import backend, sent_to
from sga_core.runs.backends import names as backend_names
from sga_core.text import plural


def build_train_config(args) -> dict:
    """Merge a preset file (``--preset``, validated first: a bad one is a one-line
    ConfigError naming the field) with the flags given on the command line."""
    from sga_core.presets import load_preset

    base: dict = {}
    if args.preset:
        base = load_preset(args.preset, keep_run_fields=True)
    base = json.loads(json.dumps(base))  # deep copy
    for key in ("model", "method", "run_id", "sweep", "group", "notes"):
        if getattr(args, key, None) is not None:
            base[key] = getattr(args, key)
    problem = name_problem(getattr(args, "sweep", None))  # a new sweep: the group rule
    if problem:
        raise ConfigError(f"sweep: {problem}")
    base.setdefault("data", {}).update(collect(args, "data."))
    if field_map(args):
        base["data"]["field_map"] = field_map(args)
    base.setdefault("training", {}).update(collect(args, "training."))
    base.setdefault("launch", {}).update(collect(args, "launch."))
    margs = collect(args, "margs.")
    if margs:
        base.setdefault("method_args", {}).update(margs)
    apply_eval_flags(base, args)
    if args.demo:
        demo_defaults(base, args)
    return base


# --- evaluation (sga_core.evaluation) ----------------------------------------------------------


def demo_defaults(base: dict, args) -> None:
    """Fill what the demo needs: its data, the prepared original model, IDK normals."""
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.prepared_ids import original_id, reference_id

    data = base.setdefault("data", {})
    data.setdefault("forget", str(DEMO_DIR / "forget.jsonl"))
    data.setdefault("retain", str(DEMO_DIR / "retain.jsonl"))
    if "model" not in base or args.model is None:
        original = RunFolder.of(original_id("demo"), args.runs_dir).model_dir
        if not is_model_folder(original):
            raise ConfigError("--demo: no prepared model at "
                              f"{original}; run `python -m sga_core prepare --demo` first")
        base["model"] = str(original)
    ev = base.setdefault("eval", {})
    if not ev.get("sets") and data.get("task", "qa") in DEMO_EVAL_SETS:
        ev["sets"] = demo_eval_sets(data.get("task", "qa"))
    reference = RunFolder.of(reference_id("demo"), args.runs_dir)
    if not ev.get("reference") and reference.has_model():
        ev["reference"] = str(reference.path)


def cmd_resume(args) -> int:
    """``train --resume RUN``: the run continues in its own folder from its newest
    checkpoint, on the backend it ran on (:func:`sga_core.runs.queue.resume`): a SLURM run
    is resubmitted to SLURM, a local run runs here (or is queued with --queue)."""
    from sga_core.runs.folder import RunFolder, run_path, runs_root
    from sga_core.runs.launch import run_foreground
    from sga_core.runs.queue import resume

    given = Path(args.resume)
    run_dir = given if given.is_dir() else run_path(args.resume, args.runs_dir)
    if not RunFolder(run_dir).exists():
        raise ConfigError(f"--resume {args.resume}: no run folder at {run_dir}")
    st = resume(run_dir, runs_root(run_dir.resolve().parent), here=not args.queue,
                workspace=args.workspace)
    print(f"run folder: {run_dir.resolve()}")
    if st.get("mode") == "queue":
        print("queued: the background runner resumes it")
        return 0
    if st.get("mode") != "foreground":  # resubmitted to the cluster it ran on
        print(f"resubmitted to {sent_to(st)}: it continues from its checkpoint (`runs list` "
              "shows it)")
        return 0
    status = run_foreground(run_dir, evaluate=args.eval_enabled)
    print(f"state: {status.get('state')}" + (f" ({status['error']})"
                                              if status.get("error") else ""))
    return 0 if status.get("state") in ("completed", "cancelled", "diverged") else 1


def cmd_train(args) -> int:
    from sga_core.config import TrainConfig
    from sga_core.runs.leftovers import clean_temp_leftovers, temp_dir

    if args.resume:
        return cmd_resume(args)
    base = build_train_config(args)
    clean_temp_leftovers()  # what an earlier, killed ``train`` left in the temporary folder
    with temp_dir("normals") as tmp:
        method = REGISTRY.get(base.get("method", "sga"))
        needs = method.needs if method else frozenset()
        if ("normals" in needs and not base["data"].get("normals") and args.idk_normals
                and base["data"].get("forget") and method.idk_normals):
            base["data"]["normals"] = write_idk_normals(base, Path(tmp) / "normals.jsonl")
        cfg = TrainConfig.from_dict(base, base_dir=Path.cwd())
        # every run folder snapshots the normals, so all are made inside this block
        return launch_planned(args, planned_runs(cfg, args))


def planned_runs(cfg, args) -> list:
    """The configs one ``train`` command makes: one per seed of ``--seeds``, and with
    ``--sweep-values`` one per value (each over every seed), grouped."""
    import copy

    from sga_core.methods import get_method
    from sga_core.projects.training import parse_sweep_values
    from sga_core.runs.seeds import expand_seeds, sweep_configs, sweep_name

    if args.sweep_values is None:
        return expand_seeds(cfg, args.runs_dir)
    param = get_method(cfg.method).sweep_param
    if param is None:
        raise ConfigError(f"--sweep-values: method {cfg.method!r} has no sweep setting")
    if cfg.run_id:
        raise ConfigError("--run-id names one run; leave it out with --sweep-values")

    def make(group: str, value: float):
        c = copy.deepcopy(cfg)
        c.method_args[param] = value
        c.sweep = group
        return c.validate()

    group = args.sweep or sweep_name("sweep")
    try:
        values = parse_sweep_values(args.sweep_values, cfg.method)
    except ConfigError as exc:
        raise ConfigError(f"--sweep-values: {str(exc).removeprefix('sweep: ')}") from None
    return sweep_configs(make, values, group, args.runs_dir)


def launch_planned(args, cfgs: list) -> int:
    """Make the run folders of ``cfgs`` and run them one after the other (or only create
    them: --no-launch; or queue them: --queue); exit code 0 when all ended well. A cancelled
    run (Ctrl-C) stops the rest before their folders exist."""
    from sga_core.runs.create import create_run
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.launch import run_foreground
    from sga_core.runs.queue import submit

    if len(cfgs) > 1:
        print(plural(len(cfgs), "run") + (f", seeds {cfgs[0].training.seeds} each"
                                     if cfgs[0].group else ""))
    where = backend(chosen_backend(args))
    if not where.foreground and not args.no_launch:
        return send(args, cfgs, where)
    queue = args.queue and not args.no_launch
    ok = True
    for cfg in cfgs:
        run_dir = (submit if queue else create_run)(cfg, args.runs_dir)
        print(f"run folder: {run_dir}")
        print(f"command:    {RunFolder(run_dir).command_path.read_text().splitlines()[-1]}")
        if args.no_launch or queue:
            continue
        status = run_foreground(run_dir)
        print(f"state: {status.get('state')}" + (f" ({status['error']})"
                                                  if status.get("error") else ""))
        ok = ok and status.get("state") in ("completed", "cancelled", "diverged")
        if status.get("state") == "cancelled" and cfg is not cfgs[-1]:
            print("cancelled: the remaining runs are not started")
            return 1
    if queue:
        print("queued: the background runner starts them one at a time "
              "(python -m sga_core runs list)")
    return 0 if ok else 1


def chosen_backend(args) -> str:
    """``--backend``, else the workspace profile's default backend."""
    if getattr(args, "backend", None):
        return args.backend
    from sga_core.runs.slurm.profile import load_profile

    return load_profile(getattr(args, "workspace", None)).backend


def send(args, cfgs: list, where) -> int:
    """Send the runs to a backend that schedules them (SLURM: one job, or one job array
    for a sweep or seed group)."""
    made = where.launch(cfgs, args.runs_dir, workspace=args.workspace)
    for run_dir in made:
        print(f"run folder: {run_dir}")
        for line in where.launched(run_dir):
            print(line)
    print(f"submitted to {where.label}: python -m sga_core runs list shows their states")
    return 0


def write_idk_normals(base: dict, out: Path) -> str:
    """Generate K-1 'I don't know' normals per forget row for a config dict. They are data,
    not training randomness: the same table (template seed 0) whatever the training seed,
    so runs that differ only in their seed train on the same normal answers."""
    from sga_core.data import load_dataset
    from sga_core.normals.idk import idk_normals

    k = int(base.get("method_args", {}).get("k", 4))
    if k < 2:
        raise ConfigError(f"--k {k}: K = 1 leaves no slot for normal answers (K counts the "
                          "forget answer and K-1 normal answers), so --idk-normals has none "
                          "to write; use --k 2 or more, or --method ga for plain gradient "
                          "ascent")
    forget = load_dataset(Path(base["data"]["forget"]).expanduser(),
                          kind=base["data"].get("task", "qa"),
                          field_map=base["data"].get("field_map") or None)
    # the same placeholder normals whatever the training seed: runs over seeds differ by
    # their seed alone
    idk_normals(len(forget), k, seed=0).save(out)
    return str(out)


def cmd_prepare(args) -> int:
    from sga_core.projects.prepare import prepare

    prefix = "text_" if args.task == "text" else ""
    forget = args.forget or (str(DEMO_DIR / f"{prefix}forget.jsonl") if args.demo else None)
    retain = args.retain or (str(DEMO_DIR / f"{prefix}retain.jsonl") if args.demo else None)
    if not forget or not retain:
        raise ConfigError("prepare needs --forget and --retain (or --demo)")
    eval_sets = {**(demo_eval_sets(args.task) if args.demo else {}), **parse_sets(args.set)}
    name = args.name or (("demo-text" if args.task == "text" else "demo") if args.demo
                         else None)
    results = prepare(forget=forget, retain=retain, model=args.model, name=name,
                      runs_dir=args.runs_dir, training=collect(args, "training."),
                      launch=collect(args, "launch."), task=args.task, which=args.which,
                      evaluate=args.eval, eval_sets=eval_sets,
                      eval_protocol=args.eval_protocol, field_map=field_map(args),
                      backend=chosen_backend(args), workspace=args.workspace,
                      max_rows=args.max_rows)
    print(json.dumps(results, indent=2))
    ended_well = ("completed",) if backend(chosen_backend(args)).foreground else \
        ("queued", "running", "completed")
    return 0 if all(r["state"] in ended_well for r in results.values()) else 1


def cmd_rstar(args) -> int:
    """Per-sample r* (docs/spec.md#21-closed-form) for a forget set and its normal answers."""
    from sga_core.data import NormalTable, load_dataset
    from sga_core.fileio import atomic_write_json
    from sga_core.methods.sga.rstar import run_analysis

    if args.project:
        from sga_core.projects import load_project, rstar_job

        project = load_project(args.project)
        forget, kind = project.forget(), project.kind
        normals_path = args.normals or project.normals_path
        out = args.out or rstar_job.job_dir(project) / "result.json"
    else:
        if not args.forget or not args.normals:
            raise ConfigError("rstar needs --forget and --normals (or --project)")
        ds = load_dataset(args.forget, kind=args.task, field_map=field_map(args))
        forget, kind, normals_path, out = ds.rows, ds.kind, args.normals, args.out
    normals = NormalTable.load(normals_path)

    def progress(done, total):
        print(f"\r{done}/{total} rows", end="", file=sys.stderr, flush=True)

    res = run_analysis(args.model, forget, normals, kind, args.k, args.convention, args.subset,
                       args.last_n_layers, progress=progress)
    print(file=sys.stderr)
    for row in res["rows"]:
        r = row["r_star"]
        print(f"row {row['forget_index']:4d}  r*={'undefined' if r is None else f'{r:+.4f}'}"
              f"  cos(a,b)={row['cos_ab'] if row['cos_ab'] is None else round(row['cos_ab'], 4)}"
              f"  |a|={row['norm_a']:.4g}  |b|={row['norm_b']:.4g}")
    s = res["summary"]
    if s.get("n"):
        print(f"r* > 0: {s['n_positive']}, r* < 0: {s['n_negative']}; median {s['median']:.4g},"
              f" IQR [{s['q1']:.4g}, {s['q3']:.4g}] (suggested range); {res['elapsed_s']} s")
    else:
        print(s.get("reason"))
    if out:
        atomic_write_json(out, res)
        print(f"saved {out}")
    return 0


def add_parsers(sub, argv: list[str] | None = None) -> None:
    """Add this module's commands to the subparsers ``sub``."""
    s = sub.add_parser("train", help="create a run folder and launch it",
                       description="Create runs/<run_id>/ (config.yaml, command.sh, data "
                                   "snapshot) and run `accelerate launch -m sga_core.train`.")
    s.add_argument("--preset", help="a YAML config/preset to start from")
    s.add_argument("--model", help="HF model id, local folder, or embedded:smollm2")
    s.add_argument("--method", choices=method_names())
    s.add_argument("--run-id")
    s.add_argument("--sweep", help="group name for runs of one sweep")
    s.add_argument("--sweep-values", metavar="LIST",
                   help="one run per value of the method's sweep setting (SGA: r): a list "
                        "(-0.8, 0, 0.4) or start:stop:step, as one sweep; with --seeds, each "
                        "value over every seed")
    s.add_argument("--group", help="seed group id (set automatically with --seeds; give it "
                                   "to add runs with other seeds to an existing group)")
    s.add_argument("--queue", action="store_true",
                   help="queue the runs for the background runner (as the browser does) "
                        "instead of running them here one after another")
    s.add_argument("--backend", choices=backend_names(),
                   help="where the runs go: here (local) or to SLURM as batch jobs, a sweep "
                        "or seed group as one job array (default: the workspace's cluster "
                        "profile, `cluster show`)")
    s.add_argument("--workspace", help="projects folder holding the cluster profile "
                                       "(default $SGA_WORKSPACE or ./workspace)")
    s.add_argument("--notes")
    s.add_argument("--runs-dir", help="runs folder (default $SGA_RUNS_DIR or ./runs)")
    s.add_argument("--resume", metavar="RUN",
                   help="continue a failed or cancelled run (its id or folder; a run "
                        "stopped at its time limit is failed) from its newest checkpoint, "
                        "in the same run folder, once the checkpoint and config are checked,"
                        " on the backend it ran on (a SLURM run is resubmitted to SLURM);"
                        " the other flags are not used (docs/long-runs.md)")
    s.add_argument("--demo", action="store_true",
                   help="use the demo data and the model from `prepare --demo`")
    s.add_argument("--idk-normals", action=argparse.BooleanOptionalAction, default=True,
                   help="for SGA without --normals, generate 'I don't know' normals")
    s.add_argument("--no-launch", action="store_true", help="only create the run folder")
    s.add_argument("--eval", dest="eval_enabled", action=argparse.BooleanOptionalAction,
                   default=None, help="evaluate the run when it completes (eval.enabled; "
                                      "default: on)")
    s.add_argument("--eval-reference", help="retain-reference model or run folder "
                                            "(eval.reference; with --demo: "
                                            "runs/demo-retain-ref when prepared)")
    s.add_argument("--eval-set", action="append", metavar="NAME=PATH",
                   help="an extra evaluation set (eval.sets), repeatable")
    s.add_argument("--eval-protocol", choices=PROTOCOL_CHOICES,
                   help="evaluation protocol (eval.protocol; default: demo)")
    from sga_core.config import DataConfig

    add_dataclass_flags(s, DataConfig, "data.")
    add_dataclass_flags(s, TrainingArgs, "training.")
    add_dataclass_flags(s, LaunchConfig, "launch.")
    method = chosen_method(argv)
    if method in REGISTRY:
        group = s.add_argument_group(
            f"settings of method {method} ({REGISTRY[method].title})",
            "the flags of the chosen method (--method, default sga); "
            "`train --method NAME --help` lists another method's")
        add_dataclass_flags(group, REGISTRY[method].Config, "margs.", clash_prefix=method)
    add_map_flag(s)
    s.set_defaults(func=cmd_train)

    s = sub.add_parser("prepare", help="fine-tune the original and retain-reference models",
                       description="The TOFU protocol: fine-tune the base model on forget + "
                                   "retain (<name>-original) and on retain only "
                                   "(<name>-retain-ref), each as a run folder.")
    s.add_argument("--forget")
    s.add_argument("--retain")
    s.add_argument("--task", choices=["qa", "text"], default="qa")
    s.add_argument("--model", default="embedded:smollm2")
    s.add_argument("--name", default=None, help="run name prefix (default 'demo' with "
                                                "--demo, else 'prepared')")
    s.add_argument("--which", choices=["both", "original", "retain-ref"], default="both")
    s.add_argument("--runs-dir")
    s.add_argument("--demo", action="store_true", help="use the demo data")
    s.add_argument("--eval", action=argparse.BooleanOptionalAction, default=True,
                   help="evaluate both models afterwards (default: on)")
    s.add_argument("--set", action="append", metavar="NAME=PATH",
                   help="an extra evaluation set (eval.sets), repeatable; --demo adds the "
                        "demo's")
    s.add_argument("--eval-protocol", choices=PROTOCOL_CHOICES,
                   help="evaluation protocol of both models (eval.protocol; default: demo)")
    s.add_argument("--max-rows", type=int, default=0, metavar="N",
                   help="evaluate at most N rows of each evaluation set, evenly spaced "
                        "(eval.max_rows, the Train page's 'evaluate at most'; default: 0 = "
                        "all)")
    s.add_argument("--backend", choices=backend_names(),
                   help="where both fine-tunings go: here, one after the other (local), or "
                        "to SLURM as two jobs, the original's held until the reference's "
                        "ended well (default: the workspace's cluster profile)")
    s.add_argument("--workspace", help="projects folder holding the cluster profile "
                                       "(default $SGA_WORKSPACE or ./workspace)")
    from sga_core.projects.prepare import PREPARE_HELP, defaults_text

    # prepare's own defaults (by --task), the same as the browser's Prepare panel
    add_dataclass_flags(s, TrainingArgs, "training.", defaults=defaults_text(),
                        helps=PREPARE_HELP)
    add_dataclass_flags(s, LaunchConfig, "launch.")
    add_map_flag(s)
    s.set_defaults(func=cmd_prepare)

    s = sub.add_parser("rstar", help="per-sample r* analysis (docs/spec.md#21-closed-form)",
                       description="For each forget row: the gradient a of its answer NLL, the"
                                   " mean gradient b of its normal answers' NLLs, r*, its sign,"
                                   " cos(a, b), |a| and |b|.")
    s.add_argument("--model", default="embedded:smollm2")
    s.add_argument("--project", help="a workbench project (uses its data; saves the result "
                                     "with it)")
    s.add_argument("--forget")
    s.add_argument("--normals")
    s.add_argument("--task", choices=["auto", "qa", "text"], default="auto")
    s.add_argument("--k", type=int, default=4)
    s.add_argument("--convention", choices=["label", "objective"], default="label")
    s.add_argument("--subset", default="all",
                   help="'all' trainable parameters, or a regex on parameter names")
    s.add_argument("--last-n-layers", type=int, default=0,
                   help="only the last N decoder layers (+ final norm and head)")
    s.add_argument("--out", help="write the result JSON here")
    add_map_flag(s)
    s.set_defaults(func=cmd_rstar)
