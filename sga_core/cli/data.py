"""``demo-data``, ``normals``, ``import`` and ``project``: the data a researcher brings (the
Data and Normal answers pages)."""

from __future__ import annotations

import sys
from pathlib import Path

from sga_core.assets import DEMO_DIR
from sga_core.cli.flags import (
    PROTOCOL_CHOICES,
    add_choice_flags,
    add_map_flag,
    collect,
    field_map,
    parse_sets,
)
from sga_core.params import ConfigError
from sga_core.runs.backends import names as backend_names
from sga_core.text import plural


def cmd_demo_data(args) -> int:
    """Copy the shipped demo corpus (assets/demo/) into OUT_DIR."""
    import shutil

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for src in sorted(DEMO_DIR.iterdir()):
        if src.suffix in (".jsonl", ".md"):
            shutil.copyfile(src, out / src.name)
            print(f"{src.stem}: {out / src.name}")
    return 0


NORMALS_PREFIX = "normals_"  # dest prefix of the backends' setting flags


def normals_options(args) -> dict:
    """The chosen backend's settings given on the command line (checked and typed by its
    ``Config``) and its seed; the retain rows for a backend that searches the retain set."""
    from sga_core.normals import get_backend
    from sga_core.params import from_dict

    backend = get_backend(args.backend)
    given = {k: v for k, v in collect(args, NORMALS_PREFIX).items()
             if k in backend.settings()}  # other backends' flags do not apply
    config = from_dict(backend.config, given)
    options: dict = {"seed": args.seed, **{k: getattr(config, k) for k in given}}
    if backend.needs_retain:
        if not args.retain:
            raise ConfigError(f"--backend {backend.name} needs --retain (the retain set to "
                              "search)")
        options["retain_rows"] = args.retain
    return options


def cmd_normals(args) -> int:
    import time

    from sga_core.data import load_dataset
    from sga_core.normals import generate_normals

    fmap = field_map(args)
    forget = load_dataset(args.forget, kind=args.task, field_map=fmap)
    options = normals_options(args)
    if "retain_rows" in options:
        options["retain_rows"] = load_dataset(options["retain_rows"], kind=forget.kind,
                                              field_map=fmap).rows
    state: dict = {"last": 0.0, "shown": None}

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if (done, total) != state["shown"] and (done >= total or now - state["last"] >= 2.0):
            state.update(last=now, shown=(done, total))
            print(f"progress: {done}/{total}", file=sys.stderr, flush=True)

    options["progress"] = progress
    result = generate_normals(args.backend, forget, forget.kind, args.k, **options)
    result.table.save(args.out)
    print(f"wrote {len(result.table)} normal answers ({args.k - 1} per forget row) "
          f"to {args.out}")
    for line in result.summary_lines():
        print(line)
    for p in result.table.problems(len(forget)):
        print(f"warning: {p}", file=sys.stderr)
    return 1 if result.errors else 0


IMPORT_PREFIX = "import_"  # dest prefix of the benchmarks' import option flags


def import_options(args) -> dict:
    """The chosen benchmark's import options given on the command line."""
    from sga_core.projects.benchmarks import get_importer

    settings = get_importer(args.benchmark).settings()
    return {k: v for k, v in collect(args, IMPORT_PREFIX).items() if k in settings}


def cmd_import(args) -> int:
    """A ready project from a benchmark (TOFU, MUSE-News) or your own book (copyright)."""
    import os

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sga_core.projects.benchmarks import import_with

    said = []

    def say(stage: str, done=None, total=None) -> None:  # each stage once
        if not said or said[-1] != stage:
            said.append(stage)
            print(f"  {stage} ...", file=sys.stderr, flush=True)

    project = import_with(args.benchmark, args.name, import_options(args),
                          root=args.workspace, overwrite=args.overwrite, progress=say)
    meta = project.meta
    print(f"project {project.name}: {project.path}")
    print(f"  forget rows: {meta.get('n_forget')}, retain rows: {meta.get('n_retain')}; "
          f"from {project.sources}")
    sets = project.eval_sets()
    print(f"  evaluation sets: {', '.join(sets) or 'none'}; protocol: {meta.get('protocol')}")
    for note in meta.get("import_notes") or []:
        print(f"  {note}")
    set_flags = " ".join(f"--set {n}={p}" for n, p in sets.items())
    print("next: python -m sga_core prepare --forget "
          f"{project.forget_path} --retain {project.retain_path} --task {project.kind} "
          f"--name {project.name} --eval-protocol {meta.get('protocol')} {set_flags}".rstrip())
    if meta.get("benchmark") == "tofu" and meta.get("variant"):
        ou = "open-unlearning/tofu_Llama-3.2-1B-Instruct"
        retain = f"retain{100 - int(str(meta['variant'])[-2:]):02d}"
        print(f"  or take open-unlearning's published models (docs/guide/published-models.md): "
              f"python -m sga_core project set-models {project.name} --original {ou}_full "
              f"--retained {ou}_{retain}")
    return 0


def cmd_project(args) -> int:
    """What the Data page does, from the shell: create a project (with a field mapping),
    add evaluation sets, show a project's sets and their roles."""
    from sga_core import projects
    from sga_core.text import printable

    if args.action == "list":
        for name in projects.list_projects(args.workspace):
            print(name)
        return 0
    if not args.name:
        raise ConfigError(f"project {args.action}: give a project NAME")
    fmap = field_map(args) or {}
    sets = parse_sets(args.set)
    chosen = {r: getattr(args, r) for r in ("original", "retained", "reference_logs")
              if getattr(args, r, None) is not None}
    if args.action == "create":
        if not args.forget:
            raise ConfigError("project create needs --forget")
        _check_models(args.name, chosen, args.online)  # a bad one: nothing is written
        maps = {"forget": fmap, "retain": fmap, **dict.fromkeys(sets, fmap)}
        project = projects.create_project(args.name, args.forget, args.retain, kind=args.kind,
                                          k=args.k, root=args.workspace,
                                          overwrite=args.replace, eval_sets=sets,
                                          field_maps=maps, confirm_roles=args.confirm_role,
                                          protocol=args.protocol)
    else:
        project = projects.load_project(args.name, args.workspace)
        if args.action == "add-set":
            if not sets:
                raise ConfigError("project add-set needs --set NAME=PATH")
            for name, path in sets.items():
                entry = project.add_eval_set(name, path, field_map=fmap, replace=args.replace,
                                             confirm_role=args.confirm_role)
                print(f"added {entry['name']} ({plural(entry['rows'], 'row')}): "
                      f"{entry['what']}")
        elif args.action == "set-models" and not chosen:
            raise ConfigError("project set-models needs --original, --retained or "
                              "--reference-logs (the word 'prepared' unsets one)")
        elif args.action == "evaluate-published":
            from sga_core.projects.published_eval import evaluate_published, evaluated_model
            from sga_core.runs.backends import job_where
            from sga_core.runs.status import read_eval

            for run_dir in evaluate_published(project, max_rows=args.max_rows or 0,
                                              backend=args.backend or "local"):
                what = evaluated_model(run_dir) or {}
                where = job_where(read_eval(run_dir))
                print(f"queued the evaluation of {run_dir.name} ({what.get('source')})"
                      + (f" as {where}" if where else "") +
                      f"; follow it: python -m sga_core runs show {run_dir.name}")
        elif args.action == "set-protocol":
            if not args.protocol:
                raise ConfigError("project set-protocol needs --protocol NAME")
            project.set_protocol(args.protocol)
        if args.action in ("set-protocol", "show"):
            _protocol_runs(project, args.reevaluate)
    if chosen:
        from sga_core.projects.published import set_published

        try:
            set_published(project, online=args.online, **chosen)
        except projects.ProjectError as exc:
            if args.action != "create":
                raise
            raise ConfigError(f"{exc}. The project was created without its published "
                              "models and log; name them again with: python -m sga_core "
                              f"project set-models {project.name} ...") from None
    meta = project.meta
    print(f"project {project.name} ({project.kind}): {meta.get('n_forget')} forget rows, "
          f"{meta.get('n_retain')} retain rows, folder {project.path}")
    from sga_core.protocols import get_protocol

    proto = get_protocol(project.protocol)
    print(f"  evaluation protocol: {proto.describe()}; settings: {proto.summary()}")
    for role, mapping in project.field_maps.items():
        if mapping:
            print(f"  {role} fields mapped: " + ", ".join(
                f"{printable(a)} -> {printable(b)}" for a, b in mapping.items()))
    for info in project.eval_set_info():
        print(f"  set {info['name']}: {plural(info['rows'], 'row')}, {info['what']}")
    from sga_core.projects.published import in_use_lines

    for line in in_use_lines(project):
        print(f"  {line}")
    from sga_core.projects.published_eval import LABELS, evaluation_state

    for role, label in LABELS.items():
        if (state := evaluation_state(project, role)) is not None:
            print(f"  published {label}: {state}")
    for warning in project.data_warnings():
        print(f"  warning: {warning}")
    if not project.eval_sets() and project.kind == "qa":
        print("  no evaluation sets: Model Utility needs utility sets (QA with perturbed "
              "answers): project add-set NAME --set my_set=FILE")
    return 0


def _check_models(name: str, chosen: dict, online: bool) -> None:
    """Check the published Original and Retained models named for a new project before
    anything is written (the eval log is checked against the project's rows once it
    exists)."""
    from sga_core.model.loading import ModelError
    from sga_core.model.published import published_model
    from sga_core.projects import ProjectError
    from sga_core.projects.published import CLEAR, ROLES, check_distinct, stored_spec

    found = {}
    for role in ("original", "retained"):
        spec = chosen.get(role)
        if spec is not None and spec.strip().lower() not in CLEAR:
            try:
                found[role] = stored_spec(published_model(spec, online=online,
                                                          role=ROLES[role]))
            except ModelError as exc:
                raise ConfigError(f"project create: {exc}; nothing was written") from None
    try:
        check_distinct(name, found)
    except ProjectError as exc:
        raise ConfigError(f"{exc}; nothing was written") from None


def _protocol_runs(project, reevaluate: bool) -> None:
    """Say which evaluated runs were evaluated under another protocol than the project's,
    and queue their evaluation under it when asked (``--reevaluate``)."""
    from sga_core import workbench as wb

    other = wb.runs_other_protocol(project)
    if not other:
        return
    listed = ", ".join(f"{r} ({p})" for r, p in other.items())
    if not reevaluate:
        print(f"  {plural(len(other), 'evaluated run')} under another protocol than "
              f"{project.protocol}: {listed}; add --reevaluate to queue their evaluation "
              f"under {project.protocol}")
        return
    skipped = wb.reevaluate(project, list(other))
    print(f"  queued the evaluation of {plural(len(other) - len(skipped), 'run')} under "
          f"{project.protocol}: {listed}")
    for why in skipped.values():
        print(f"  not queued: {why}")


def add_parsers(sub, argv: list[str] | None = None) -> None:
    """Add this module's commands to the subparsers ``sub``."""
    from sga_core.normals import backends as normal_backends
    from sga_core.projects.benchmarks import benchmark_importers

    s = sub.add_parser("demo-data", help="write the demo corpus")
    s.add_argument("out_dir")
    s.set_defaults(func=cmd_demo_data)

    s = sub.add_parser("normals", help="generate normal answers",
                       description="Generate K-1 normal answers per forget row. The openai "
                                   "backend reads its API key from the environment variable "
                                   "OPENAI_API_KEY only.")
    backends = normal_backends()
    s.add_argument("--backend", choices=[b.name for b in backends], default="idk",
                   help="; ".join(f"{b.name}: {b.description}" for b in backends) +
                        " (default: idk)")
    s.add_argument("--forget", required=True)
    s.add_argument("--retain", help="retain set to search (" + ", ".join(
        b.name for b in backends if b.needs_retain) + ")")
    s.add_argument("--task", choices=["auto", "qa", "text"], default="auto")
    s.add_argument("--k", type=int, default=4, help="K (K-1 normal answers per row)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", required=True, help="output JSONL")
    # one flag per backend setting (its Config); API keys are never flags
    add_choice_flags(s, {b.name: b.config for b in backends}, NORMALS_PREFIX)
    add_map_flag(s)
    s.set_defaults(func=cmd_normals)

    s = sub.add_parser(
        "import", help="a ready project from a benchmark (TOFU, MUSE-News, MUSE-Books) or "
                       "your book",
        description="Write a project (forget and retain data, evaluation sets, the "
                    "benchmark's evaluation protocol) from TOFU or MUSE-News through Hugging "
                    "Face datasets (--online: the hub; default: the local HF cache only; "
                    "--from-folder: files you downloaded), or the copyright task from your "
                    "own text files (copyright --book --retain).")
    importers = benchmark_importers()
    s.add_argument("benchmark", choices=[b.name for b in importers],
                   help="; ".join(f"{b.name}: {b.label}" for b in importers))
    s.add_argument("--name", help="project name (default: tofu-<split> / muse-news)")
    s.add_argument("--workspace", help="projects folder (default $SGA_WORKSPACE or "
                                       "./workspace)")
    s.add_argument("--overwrite", action="store_true", help="replace a project of that name")
    # one flag per import option of each benchmark (its Config)
    add_choice_flags(s, {b.name: b.config for b in importers}, IMPORT_PREFIX)
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("project", help="create a project, add evaluation sets (the Data page)",
                       description="Projects live in $SGA_WORKSPACE (default ./workspace), as "
                                   "the browser's do. `create NAME --forget F --retain R "
                                   "--map prompt=question --map response=answer` imports files "
                                   "with other field names (the mapping is kept with the "
                                   "project); `add-set NAME --set my_authors=FILE` adds an "
                                   "evaluation set (a QA set with perturbed answers is a Model "
                                   "Utility component); `set-protocol NAME --protocol muse` "
                                   "changes the evaluation protocol (--reevaluate queues the "
                                   "runs evaluated under another); `set-models NAME --original "
                                   "ID --retained ID --reference-logs TOFU_EVAL.json` takes "
                                   "published checkpoints and eval logs instead of Prepare's; "
                                   "`evaluate-published NAME` queues their evaluation (the "
                                   "Original and Retained rows of Results); "
                                   "`show NAME` lists the sets, roles and models in use.")
    s.add_argument("action", choices=["create", "add-set", "set-protocol", "set-models",
                                      "evaluate-published", "show", "list"])
    s.add_argument("name", nargs="?")
    s.add_argument("--forget")
    s.add_argument("--retain")
    s.add_argument("--kind", choices=["auto", "qa", "text"], default="auto")
    s.add_argument("--k", type=int, default=4, help="K (default 4)")
    s.add_argument("--set", action="append", metavar="NAME=PATH",
                   help="an evaluation set, repeatable")
    s.add_argument("--replace", action="store_true",
                   help="replace a project (create) or a set (add-set) of the same name")
    s.add_argument("--protocol", choices=PROTOCOL_CHOICES,
                   help="the evaluation protocol of the project's runs (create, "
                        "set-protocol; default demo)")
    s.add_argument("--confirm-role", action="store_true",
                   help="take the role a set's name gives it (forget_eval, holdout, forget_qa, "
                        "<set>_icl, ...); without it such a name is refused, saying the role")
    s.add_argument("--original", metavar="ID_OR_FOLDER",
                   help="create, set-models: the model to unlearn from a published checkpoint "
                        "(a hub id such as open-unlearning/tofu_Llama-3.2-1B-Instruct_full, "
                        "found in the local HF cache, or a folder) instead of Prepare's; "
                        "'prepared' unsets it")
    s.add_argument("--retained", metavar="ID_OR_FOLDER",
                   help="create, set-models: the Retained model (the retain reference for "
                        "Forget Quality and PrivLeak) from a published checkpoint; "
                        "'prepared' unsets it")
    s.add_argument("--reference-logs", metavar="FILE",
                   help="create, set-models: a retain model's published open-unlearning eval "
                        "log (TOFU_EVAL.json, MUSE_EVAL.json, or the folder holding it) as the "
                        "reference, checked against the project's rows; 'prepared' unsets it")
    s.add_argument("--online", action="store_true",
                   help="create, set-models: download a hub id missing from the local HF "
                        "cache (default: the cache only)")
    s.add_argument("--max-rows", type=int, metavar="N",
                   help="evaluate-published: evaluate at most N rows of each set, evenly "
                        "spaced (default 0: all)")
    s.add_argument("--backend", choices=backend_names(),
                   help="evaluate-published: where the evaluations run (default: this "
                        "machine's queue); on SLURM a job each, the Original's held until "
                        "the Retained's ended well")
    s.add_argument("--reevaluate", action="store_true",
                   help="set-protocol / show: queue the evaluation of the runs evaluated "
                        "under another protocol, under the project's")
    s.add_argument("--workspace", help="projects folder (default $SGA_WORKSPACE or "
                                       "./workspace)")
    add_map_flag(s)
    s.set_defaults(func=cmd_project)
