"""``sustain``: MUSE's sustainability study of a project (``--scale``: its scalability
study), launched, or its curve shown (``--show``); the Results page's Studies section."""

from __future__ import annotations

from sga_core.cli.flags import add_dataclass_flags, chosen_method, collect
from sga_core.config import LaunchConfig, TrainingArgs
from sga_core.methods import REGISTRY, method_names
from sga_core.params import ConfigError
from sga_core.runs.backends import backend
from sga_core.runs.backends import names as backend_names


def cmd_sustain(args) -> int:
    from sga_core.projects import load_project

    project = load_project(args.project, args.workspace)
    if args.show is not None:
        return show(project, args)
    return launch(project, args)


def launch(project, args) -> int:
    """Write the study and run its requests: here one after another (each evaluated before
    the next starts), or sent to the queue (--queue) or the cluster as a chain."""
    from sga_core.cli.training import chosen_backend
    from sga_core.projects.study import save_study, study_configs
    from sga_core.runs.create import create_run
    from sga_core.runs.launch import run_foreground

    mode = "scale" if args.scale else "sustain"
    study, cfgs = study_configs(
        project, mode, method=args.method or "sga", method_args=collect(args, "margs."),
        training=collect(args, "training."), launch=collect(args, "launch."),
        model=args.model, name=args.name, requests=args.requests, max_rows=args.max_rows,
        root=args.runs_dir)
    save_study(project, study)
    print(f"study {study.name} ({mode}): {len(cfgs)} requests, "
          f"{', '.join(study.parts)}; starting model {study.start_model}")
    where = backend(chosen_backend(args))
    if not where.foreground or args.queue:
        for run_dir in where.launch(cfgs, args.runs_dir, chain=True,
                                    workspace=args.workspace):
            print(f"run folder: {run_dir}")
            for line in where.launched(run_dir):
                print(line)
        print(f"sent to {where.label} as a chain: `sustain --project {project.name} --show "
              f"{study.name}` shows the curve as the runs are evaluated")
        return 0
    ok = True
    for cfg in cfgs:
        run_dir = create_run(cfg, args.runs_dir)
        print(f"run folder: {run_dir}")
        state = run_foreground(run_dir).get("state")
        print(f"state: {state}")
        if state != "completed":
            ok = False
            if mode == "sustain":
                print("the later requests start from this run's model: not started")
                break
    show(project, args, study.name)
    return 0 if ok else 1


def show(project, args, name: str | None = None) -> int:
    """Print a study's curve: each request's values, then the Original's and Retained's."""
    from sga_core.cli.report import text_table
    from sga_core.projects.study import list_studies
    from sga_core.report.study import study_curve

    studies = list_studies(project)
    name = name or args.show or (studies[0].name if studies else None)
    study = next((s for s in studies if s.name == name), None)
    if name is None:
        raise ConfigError(f"project {project.name} has no study yet: launch one with "
                          f"`python -m sga_core sustain --project {project.name}`")
    if study is None:
        known = ", ".join(s.name for s in studies) or "none yet"
        raise ConfigError(f"project {project.name} has no study {name!r} (its studies: "
                          f"{known})")
    curve = study_curve(study, args.runs_dir, args.metric or None)
    metrics = curve["metrics"]
    rows = [[str(p["request"]), p["part"], p["run"], p["state"]] +
            [_fmt(p["values"].get(m)) for m in metrics] for p in curve["points"]]
    rows += [["-", label, "(reference)", ""] + [_fmt(vals.get(m)) for m in metrics]
             for label, vals in curve["references"].items()]
    print(f"study {study.name}: {study.mode}, method {study.method}; x = {curve['x_label']}")
    for line in text_table(["request", "forget part", "run", "state", *metrics], rows):
        print(line)
    return 0


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.4g}"


def add_parsers(sub, argv: list[str] | None = None) -> None:
    s = sub.add_parser(
        "sustain", help="MUSE's sustainability (or --scale: scalability) study of a project",
        description="Unlearn a project's MUSE sust forget parts (forget_1..4, imported with "
                    "`import muse-news --study-splits`) one after another, each run starting "
                    "from the last run's model and evaluated after its request; --scale: "
                    "one run per scal forget set of growing size, each from the Original. "
                    "--show prints a study's curve.")
    s.add_argument("--project", required=True, help="the project (its forget parts)")
    s.add_argument("--workspace", help="projects folder (default $SGA_WORKSPACE or "
                                       "./workspace)")
    s.add_argument("--runs-dir", help="runs folder (default $SGA_RUNS_DIR or ./runs)")
    s.add_argument("--scale", action="store_true",
                   help="the scalability study: each forget set from the starting model")
    s.add_argument("--show", nargs="?", const="", metavar="STUDY",
                   help="print a study's curve (default: the newest) instead of launching")
    s.add_argument("--metric", action="append", metavar="NAME",
                   help="with --show: a metric to print, repeatable (default: "
                        "forget_knowmem, forget_verbmem, retain_knowmem)")
    s.add_argument("--name", help="the study's name (its runs are <name>-r1, -r2, ...)")
    s.add_argument("--requests", type=int, default=0, metavar="N",
                   help="the first N requests only (default: 0 = all)")
    s.add_argument("--model", help="the model request 1 starts from (default: the project's "
                                   "prepared Original)")
    s.add_argument("--method", choices=method_names(), help="default: sga")
    s.add_argument("--max-rows", type=int, default=0, metavar="N",
                   help="evaluate at most N rows of each set (eval.max_rows; 0 = all)")
    s.add_argument("--queue", action="store_true",
                   help="queue the requests for the background runner (as the browser "
                        "does) instead of running them here one after another")
    s.add_argument("--backend", choices=backend_names(),
                   help="where the runs go (default: the workspace's cluster profile); on "
                        "SLURM each request's job is held until the one before ended well")
    add_dataclass_flags(s, TrainingArgs, "training.")
    add_dataclass_flags(s, LaunchConfig, "launch.")
    method = chosen_method(argv)
    if method in REGISTRY:
        group = s.add_argument_group(f"settings of method {method}",
                                     "the chosen method's flags (--method, default sga)")
        add_dataclass_flags(group, REGISTRY[method].Config, "margs.", clash_prefix=method)
    s.set_defaults(func=cmd_sustain)

