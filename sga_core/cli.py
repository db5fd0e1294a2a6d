"""``python -m sga_core <command>``: everything the browser does, from the shell (SPEC 8)."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

from sga_core.assets import DEMO_DIR, DEMO_EVAL_SETS, demo_eval_sets
from sga_core.config import LaunchConfig, TrainingArgs
from sga_core.methods import REGISTRY, method_names
from sga_core.model.loading import is_model_folder
from sga_core.params import ConfigError, field_specs

PROTOCOL_CHOICES = ["demo", "tofu", "muse", "copyright"]  # sga_core.evaluation.protocols


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_dataclass_flags(parser, cls, dest_prefix: str, *, clash_prefix: str = "") -> None:
    """One flag per field of dataclass ``cls``, its help and default from the field's
    metadata; unset flags stay None. A field whose flag another option already uses gets
    ``--<clash_prefix>-<name>`` instead (a method's ``max_length`` next to the training one);
    without a ``clash_prefix`` that is a programming error."""
    taken = parser._option_string_actions if hasattr(parser, "_option_string_actions") else {}
    for spec in field_specs(cls):
        name = spec["name"]
        if spec["kind"] == "dict":
            continue  # mappings have flags of their own (--map, --eval-set)
        flag = _flag(name)
        if flag in taken:
            if not clash_prefix:
                raise ValueError(f"{cls.__name__}.{name}: flag {flag} is already taken")
            flag = _flag(f"{clash_prefix}_{name}")
        help_text = f"{spec.get('help') or ''} (default: {spec['default']!r})"
        kwargs = {"dest": f"{dest_prefix}{name}", "default": None, "help": help_text}
        if spec["kind"] == "bool":
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, **kwargs)
        else:
            if spec.get("choices"):
                kwargs["choices"] = list(spec["choices"])
            parser.add_argument(flag, metavar=name.upper(), **kwargs)


def chosen_method(argv: list[str] | None) -> str:
    """The method a ``train`` command line is about: ``--method``, else its ``--preset``'s,
    else sga. Only that method's settings become flags, each with its own default."""
    argv = list(sys.argv[1:] if argv is None else argv)
    value = {}
    for i, arg in enumerate(argv):
        for key in ("--method", "--preset"):
            if arg == key and i + 1 < len(argv):
                value[key] = argv[i + 1]
            elif arg.startswith(key + "="):
                value[key] = arg.split("=", 1)[1]
    if "--method" in value:
        return value["--method"]
    if "--preset" in value:
        from sga_core.presets import load_preset

        try:
            return load_preset(value["--preset"], keep_run_fields=True).get("method", "sga")
        except ConfigError:
            pass  # reported when the preset is read for real
    return "sga"


def add_map_flag(parser) -> None:
    parser.add_argument("--map", action="append", dest="field_map",
                        metavar="FILE_FIELD=FIELD",
                        help="read a data file's field under the workbench's name, e.g. "
                             "--map prompt=question --map response=answer (repeatable; "
                             "applies to every data file the command reads)")


def field_map(args) -> dict[str, str] | None:
    """The ``--map`` flags as a mapping (None when none were given)."""
    from sga_core.data.mapping import parse_map

    return parse_map(getattr(args, "field_map", None)) or None


def collect(args: argparse.Namespace, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in vars(args).items()
            if k.startswith(prefix) and v is not None}


# ------------------------------------------------------------------------------------------

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


def cmd_normals(args) -> int:
    import time

    from sga_core.data import load_dataset
    from sga_core.normals import generate_normals

    fmap = field_map(args)
    forget = load_dataset(args.forget, kind=args.task, field_map=fmap)
    options: dict = {"seed": args.seed}
    if args.backend == "retrieval":
        if not args.retain:
            raise ConfigError("--backend retrieval needs --retain (the retain set to search)")
        options.update(retain_rows=load_dataset(args.retain, kind=forget.kind,
                                                field_map=fmap).rows,
                       embedding_model=args.embedding_model, threshold=args.threshold)
    elif args.backend in ("openai", "local"):
        options.update(model=args.model, template=args.template)
        if args.backend == "openai":
            # the key only ever comes from the environment (OPENAI_API_KEY), never a flag
            options.update(base_url=args.base_url, max_concurrency=args.max_concurrency,
                           timeout=args.timeout)
        else:
            options.update(max_new_tokens=args.max_new_tokens)
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

def parse_sets(items: list[str] | None) -> dict[str, str]:
    """``--set name=path`` flags -> {name: path}."""
    out: dict[str, str] = {}
    for item in items or []:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ConfigError(f"--set {item!r}: expected NAME=PATH")
        out[name.strip()] = path.strip()
    return out


def apply_eval_flags(base: dict, args) -> None:
    """``train``'s --eval/--no-eval, --eval-reference and --eval-set into ``base['eval']``."""
    ev = base.setdefault("eval", {})
    if getattr(args, "eval_enabled", None) is not None:
        ev["enabled"] = args.eval_enabled
    if getattr(args, "eval_reference", None):
        ev["reference"] = args.eval_reference
    if getattr(args, "eval_protocol", None):
        ev["protocol"] = args.eval_protocol
    sets = parse_sets(getattr(args, "eval_set", None))
    if sets:
        ev["sets"] = {**(ev.get("sets") or {}), **sets}
    if not ev:
        base.pop("eval")


def _eval_progress():
    """A progress printer for evaluations: '[HH:MM:SS] eval: stage done/total' lines (the
    format run_foreground echoes), at most one per stage every 2 seconds."""
    import time

    state = {"stage": None, "t": 0.0}

    def progress(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage != state["stage"] or done >= total or now - state["t"] >= 2.0:
            state.update(stage=stage, t=now)
            print(f"[{time.strftime('%H:%M:%S')}] eval: {stage} {done}/{total}", flush=True)

    return progress


def cmd_eval(args) -> int:
    import os

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sga_core.evaluation import EvalSettings, evaluate_model, evaluate_run, format_summary
    from sga_core.runs.folder import runs_root

    target = Path(args.target).expanduser()
    if not target.exists() and (runs_root(args.runs_dir) / args.target / "config.yaml").exists():
        target = runs_root(args.runs_dir) / args.target  # a run id
    sets = parse_sets(args.set)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
    fmap = field_map(args)
    if (target / "config.yaml").exists():
        if fmap:
            raise ConfigError("--map: a run folder's data already has the workbench's field "
                              "names; map an evaluation set's fields when adding it to a "
                              "project (python -m sga_core project add-set ... --map)")
        if args.forget or args.retain:
            raise ConfigError("--forget/--retain: a run folder is evaluated on its own data "
                              "(its config); give a model folder to evaluate other data")
        overrides = {"sets": sets, "reference": args.reference,
                     "max_new_tokens": args.max_new_tokens,
                     "max_retain_rows": args.max_retain_rows, "batch_size": args.batch_size,
                     "device": args.device, **protocol_overrides(args)}
        summary = evaluate_run(target, _eval_progress(), overrides=overrides, out_dir=args.out)
        out = Path(args.out) if args.out else target / "eval"
    else:
        if not args.forget or not args.out:
            raise ConfigError(f"{args.target} is not a run folder: evaluating a model needs "
                              "--forget, --retain and --out")
        ov = protocol_overrides(args)
        settings = EvalSettings(
            max_new_tokens=args.max_new_tokens, max_retain_rows=args.max_retain_rows,
            batch_size=args.batch_size or 16, max_length=args.max_length or 256,
            system_prompt=args.system_prompt, dtype=args.dtype, device=args.device or "auto",
            protocol=ov.get("protocol") or "demo", prompt_format=ov.get("prompt_format"),
            lm_eval_tasks=tuple(ov.get("lm_eval_tasks") or ()),
            lm_eval_limit=ov.get("lm_eval_limit"), lm_eval_include=ov.get("lm_eval_include"),
            retrained_auc=ov.get("retrained_auc"))
        forget, retain = args.forget, args.retain
        if fmap:  # rows under the workbench's names (the files stay as they are)
            from sga_core.data import load_dataset

            forget = load_dataset(forget, kind=args.task, field_map=fmap).rows
            retain = load_dataset(retain, field_map=fmap).rows if retain else None
            sets = {n: load_dataset(p, field_map=fmap).rows for n, p in sets.items()}
        summary = evaluate_model(args.target, args.out, forget, retain, sets,
                                 args.reference, task=args.task, settings=settings,
                                 progress=_eval_progress())
        out = Path(args.out)
    print(format_summary(summary))
    print(f"wrote {out / 'summary.json'} and {out / 'per_sample.jsonl'}")
    return 0


def protocol_overrides(args) -> dict:
    """``eval``'s protocol flags (only those given)."""
    ov = {"protocol": args.protocol, "prompt_format": args.prompt_format,
          "lm_eval_tasks": args.lm_eval_task, "lm_eval_limit": args.lm_eval_limit,
          "lm_eval_include": args.lm_eval_include, "retrained_auc": args.retrained_auc}
    return {k: v for k, v in ov.items() if v is not None}


def cmd_import(args) -> int:
    """A ready project from a benchmark (TOFU, MUSE-News) or your own book (copyright)."""
    import os

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sga_core.projects.benchmarks import import_benchmark, import_copyright

    if args.benchmark == "copyright":
        if not args.book or not args.retain_text or not args.name:
            raise ConfigError("import copyright needs --book BOOK.txt, --retain RETAIN.txt and "
                              "--name NAME (your own text files: nothing copyrighted ships)")
        project = import_copyright(args.name, args.book, args.retain_text, model=args.model,
                                   segment_tokens=args.segment_tokens,
                                   prompt_tokens=args.prompt_tokens, root=args.workspace,
                                   overwrite=args.overwrite)
    else:
        project = import_benchmark(args.benchmark, args.name, variant=args.split,
                                   folder=args.from_folder, online=args.online,
                                   root=args.workspace, overwrite=args.overwrite)
    meta = project.meta
    print(f"project {project.name}: {project.path}")
    print(f"  forget rows: {meta.get('n_forget')} ({meta.get('forget_source')}), retain rows: "
          f"{meta.get('n_retain')} ({meta.get('retain_source')})")
    sets = project.eval_sets()
    print(f"  evaluation sets: {', '.join(sets) or 'none'}; protocol: {meta.get('protocol')}")
    set_flags = " ".join(f"--set {n}={p}" for n, p in sets.items())
    print("next: python -m sga_core prepare --forget "
          f"{project.forget_path} --retain {project.retain_path} --task {project.kind} "
          f"--name {project.name} --eval-protocol {meta.get('protocol')} {set_flags}".rstrip())
    return 0


def demo_defaults(base: dict, args) -> None:
    """Fill what the demo needs: its data, the prepared original model, IDK normals."""
    from sga_core.runs.folder import runs_root

    data = base.setdefault("data", {})
    data.setdefault("forget", str(DEMO_DIR / "forget.jsonl"))
    data.setdefault("retain", str(DEMO_DIR / "retain.jsonl"))
    if "model" not in base or args.model is None:
        original = runs_root(args.runs_dir) / "demo-original" / "model"
        if not is_model_folder(original):
            raise ConfigError("--demo: no prepared model at "
                              f"{original}; run `python -m sga_core prepare --demo` first")
        base["model"] = str(original)
    ev = base.setdefault("eval", {})
    if not ev.get("sets") and data.get("task", "qa") in DEMO_EVAL_SETS:
        ev["sets"] = demo_eval_sets(data.get("task", "qa"))
    reference = runs_root(args.runs_dir) / "demo-retain-ref"
    if not ev.get("reference") and is_model_folder(reference / "model"):
        ev["reference"] = str(reference)


def cmd_train(args) -> int:
    import tempfile

    from sga_core.config import TrainConfig

    base = build_train_config(args)
    with tempfile.TemporaryDirectory(prefix="sga-normals-") as tmp:
        method = REGISTRY.get(base.get("method", "sga"))
        needs = method.needs if method else frozenset()
        if ("normals" in needs and not base["data"].get("normals") and args.idk_normals
                and base["data"].get("forget")):
            base["data"]["normals"] = write_idk_normals(base, Path(tmp) / "normals.jsonl")
        cfg = TrainConfig.from_dict(base, base_dir=Path.cwd())
        # every run folder snapshots the normals, so all are made inside this block
        return launch_planned(args, planned_runs(cfg, args))


def planned_runs(cfg, args) -> list:
    """The configs one ``train`` command makes: one per seed of ``--seeds``, and with
    ``--sweep-values`` one per value (each over every seed), grouped."""
    import copy

    from sga_core.methods import get_method
    from sga_core.projects.training import parse_r_values
    from sga_core.runs.seeds import expand_seeds, sweep_configs, sweep_name

    if not args.sweep_values:
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
    return sweep_configs(make, parse_r_values(args.sweep_values), group, args.runs_dir)


def launch_planned(args, cfgs: list) -> int:
    """Make the run folders of ``cfgs`` and run them one after the other (or only create
    them: --no-launch; or queue them: --queue); exit code 0 when all ended well. A cancelled
    run (Ctrl-C) stops the rest before their folders exist."""
    from sga_core.runs.folder import create_run
    from sga_core.runs.launch import run_foreground
    from sga_core.runs.queue import submit

    if len(cfgs) > 1:
        print(f"{len(cfgs)} runs" + (f", seeds {cfgs[0].training.seeds} each"
                                     if cfgs[0].group else ""))
    queue = args.queue and not args.no_launch
    ok = True
    for cfg in cfgs:
        run_dir = (submit if queue else create_run)(cfg, args.runs_dir)
        print(f"run folder: {run_dir}")
        print(f"command:    {(run_dir / 'command.sh').read_text().splitlines()[-1]}")
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


def write_idk_normals(base: dict, out: Path) -> str:
    """Generate K-1 'I don't know' normals per forget row for a config dict. They are data,
    not training randomness: the same table (template seed 0) whatever the training seed,
    so runs that differ only in their seed train on the same normal answers."""
    from sga_core.data import load_dataset
    from sga_core.normals.idk import idk_normals

    k = int(base.get("method_args", {}).get("k", 4))
    forget = load_dataset(Path(base["data"]["forget"]).expanduser(),
                          kind=base["data"].get("task", "qa"),
                          field_map=base["data"].get("field_map") or None)
    # the same placeholder normals whatever the training seed: runs over seeds differ by
    # their seed alone
    idk_normals(len(forget), k, seed=0).save(out)
    return str(out)


def cmd_prepare(args) -> int:
    from sga_core.prepare import prepare

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
                      eval_protocol=args.eval_protocol, field_map=field_map(args))
    print(json.dumps(results, indent=2))
    return 0 if all(r["state"] == "completed" for r in results.values()) else 1


def cmd_rstar(args) -> int:
    """Per-sample r* (SPEC 2) for a forget set and its normal answers."""
    from sga_core.data import NormalTable, load_dataset
    from sga_core.fileio import atomic_write_json
    from sga_core.rstar import run_analysis

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


def cmd_project(args) -> int:
    """What the Data page does, from the shell: create a project (with a field mapping),
    add evaluation sets, show a project's sets and their roles."""
    from sga_core import projects

    if args.action == "list":
        for name in projects.list_projects(args.workspace):
            print(name)
        return 0
    if not args.name:
        raise ConfigError(f"project {args.action}: give a project NAME")
    fmap = field_map(args) or {}
    sets = parse_sets(args.set)
    if args.action == "create":
        if not args.forget:
            raise ConfigError("project create needs --forget")
        maps = {"forget": fmap, "retain": fmap, **dict.fromkeys(sets, fmap)}
        project = projects.create_project(args.name, args.forget, args.retain, kind=args.kind,
                                          k=args.k, root=args.workspace,
                                          overwrite=args.replace, eval_sets=sets,
                                          field_maps=maps)
    else:
        project = projects.load_project(args.name, args.workspace)
        if args.action == "add-set":
            if not sets:
                raise ConfigError("project add-set needs --set NAME=PATH")
            for name, path in sets.items():
                project.add_eval_set(name, path, field_map=fmap, replace=args.replace)
    meta = project.meta
    print(f"project {project.name} ({project.kind}): {meta.get('n_forget')} forget rows, "
          f"{meta.get('n_retain')} retain rows, folder {project.path}")
    for role, mapping in project.field_maps.items():
        if mapping:
            print(f"  {role} fields mapped: " + ", ".join(f"{a} -> {b}" for a, b in
                                                          mapping.items()))
    for info in project.eval_set_info():
        print(f"  set {info['name']}: {info['rows']} rows, {info['what']}")
    if not project.eval_sets() and project.kind == "qa":
        print("  no evaluation sets: Model Utility needs utility sets (QA with perturbed "
              "answers): project add-set NAME --set my_set=FILE")
    return 0


def cmd_runs(args) -> int:
    from sga_core.runs import folder, queue
    from sga_core.runs import status as run_status

    root = folder.runs_root(args.runs_dir)
    if args.action == "list":
        rows = folder.list_runs(root)
        if not rows:
            print(f"no runs in {root}")
        for r in rows:
            prog = f"{r['step']}/{r['total_steps']}" if r.get("total_steps") else ""
            print(f"{r['run_id']:48s} {r['state']:10s} {r['method'] or '':9s} "
                  f"r={r['r'] if r['r'] is not None else '-':<6} {prog}")
        return 0
    if not args.run_id:
        raise ConfigError(f"runs {args.action}: give a RUN_ID")
    run_dir = folder.run_path(args.run_id, root)  # never a path outside the runs folder
    if not (run_dir / "config.yaml").exists():
        raise ConfigError(f"no run {args.run_id!r} in {root}")
    if args.action == "show":
        print(json.dumps(run_status.effective_run(run_dir), indent=2))
        m = folder.metrics(run_dir)
        if m:
            print("last metrics:", json.dumps(m[-1]))
        return 0
    if args.action == "cancel":
        st = queue.cancel(run_dir)
        print(f"cancel requested for {args.run_id}: {st.get('state')} (a running run stops at "
              "its next step)")
        return 0
    raise ConfigError(f"unknown action {args.action}")


# ------------------------------------------------------------------------------------------

def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command-line parser; ``argv`` decides which method's settings ``train`` offers."""
    p = argparse.ArgumentParser(prog="python -m sga_core", allow_abbrev=False,
                                description="SGA Workbench: LLM unlearning with smoothed "
                                            "gradient ascent.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser = functools.partial(sub.add_parser, allow_abbrev=False)  # no --r for --retain

    s = sub.add_parser("demo-data", help="write the demo corpus")
    s.add_argument("out_dir")
    s.set_defaults(func=cmd_demo_data)

    s = sub.add_parser("normals", help="generate normal answers",
                       description="Generate K-1 normal answers per forget row. The openai "
                                   "backend reads its API key from the environment variable "
                                   "OPENAI_API_KEY only.")
    s.add_argument("--backend", choices=["retrieval", "openai", "local", "idk"], default="idk",
                   help="retrieval: answers of similar retain rows; openai: an "
                        "OpenAI-compatible chat API; local: a local instruct model; idk: "
                        "'I don't know' templates (default: idk)")
    s.add_argument("--forget", required=True)
    s.add_argument("--retain", help="retain set to search (retrieval)")
    s.add_argument("--task", choices=["auto", "qa", "text"], default="auto")
    s.add_argument("--k", type=int, default=4, help="K (K-1 normal answers per row)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", required=True, help="output JSONL")
    s.add_argument("--embedding-model", help="retrieval: sentence-transformers model folder "
                                             "or cached name (default: the embedded "
                                             "all-MiniLM-L6-v2)")
    s.add_argument("--threshold", type=float, default=0.5,
                   help="retrieval: a neighbour's cosine similarity must be above this "
                        "(default: 0.5)")
    s.add_argument("--model", help="openai: model name (default gpt-4o-mini); local: model "
                                   "spec (default embedded:smollm2)")
    s.add_argument("--base-url", help="openai: base URL of an OpenAI-compatible server")
    s.add_argument("--template", help="openai/local: prompt template name in assets/prompts "
                                      "or a YAML path (default: by data kind)")
    s.add_argument("--max-concurrency", type=int, default=4,
                   help="openai: parallel requests (default: 4)")
    s.add_argument("--timeout", type=float, default=60.0,
                   help="openai: seconds per request (default: 60)")
    s.add_argument("--max-new-tokens", type=int, default=64,
                   help="local: tokens generated per answer (default: 64)")
    add_map_flag(s)
    s.set_defaults(func=cmd_normals)

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
    s.add_argument("--notes")
    s.add_argument("--runs-dir", help="runs folder (default $SGA_RUNS_DIR or ./runs)")
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
    add_dataclass_flags(s, TrainingArgs, "training.")
    add_dataclass_flags(s, LaunchConfig, "launch.")
    add_map_flag(s)
    s.set_defaults(func=cmd_prepare)

    s = sub.add_parser(
        "eval", help="evaluate a run or a model",
        description="Evaluate a run folder (its model, data and eval settings; writes "
                    "RUN_DIR/eval/summary.json and per_sample.jsonl) or a model folder / hub "
                    "id / embedded:smollm2 on --forget/--retain data into --out. QA data: "
                    "TOFU metrics (probability, truth ratio, ROUGE-L, Model Utility, Forget "
                    "Quality vs --reference). Text data: MUSE metrics (VerbMem, KnowMem, "
                    "Min-K% AUC, PrivLeak vs --reference, perplexity).")
    s.add_argument("target", metavar="RUN_DIR|MODEL",
                   help="a run folder (or run id), or a model to evaluate")
    s.add_argument("--forget", help="forget data (a model only)")
    s.add_argument("--retain", help="retain data (a model only)")
    s.add_argument("--task", choices=["auto", "qa", "text"], default="auto",
                   help="data kind for a model (default: from the forget data)")
    s.add_argument("--set", action="append", metavar="NAME=PATH",
                   help="an extra evaluation set, repeatable (QA: real_authors, world_facts; "
                        "text: holdout, forget_qa, retain_qa)")
    s.add_argument("--reference", help="retain-reference model or run folder (Forget "
                                       "Quality / PrivLeak)")
    s.add_argument("--out", help="output folder (required for a model; default for a run: "
                                 "RUN_DIR/eval)")
    s.add_argument("--max-new-tokens", type=int, help="tokens per QA answer (default 48)")
    s.add_argument("--max-retain-rows", type=int,
                   help="evaluate at most N retain rows, evenly spaced (default 40; 0 = all)")
    s.add_argument("--batch-size", type=int, help="sequences per batch (default 16)")
    s.add_argument("--max-length", type=int, help="a model only: truncate to N tokens "
                                                  "(default 256)")
    s.add_argument("--system-prompt", help="a model only: system prompt for chat templates")
    s.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    s.add_argument("--device", help="cpu, cuda, ... (default: cpu for a run with launch.device "
                                    "cpu, else auto: the GPU when there is one)")
    s.add_argument("--runs-dir", help="where to look up a run id")
    s.add_argument("--protocol", choices=PROTOCOL_CHOICES,
                   help="evaluation protocol: demo (fast settings of its own), tofu, muse, "
                        "copyright (default: a run's eval.protocol, else demo)")
    s.add_argument("--prompt-format", choices=["chat", "llama2", "question-answer"],
                   help="QA prompt format (default: the protocol's, the chat template)")
    s.add_argument("--lm-eval-task", action="append", metavar="TASK",
                   help="an extra lm-evaluation-harness task (a utility column), repeatable")
    s.add_argument("--lm-eval-limit", type=float,
                   help="at most N documents per lm-eval task (a fraction below 1)")
    s.add_argument("--lm-eval-include", help="a folder of lm-eval task YAML files")
    s.add_argument("--retrained-auc", type=float,
                   help="PrivLeak against this retrained MIA AUC instead of the reference's")
    add_map_flag(s)
    s.set_defaults(func=cmd_eval)

    s = sub.add_parser(
        "import", help="a ready project from a benchmark (TOFU, MUSE-News) or your book",
        description="Write a project (forget and retain data, evaluation sets, the "
                    "benchmark's evaluation protocol) from TOFU or MUSE-News through Hugging "
                    "Face datasets (--online: the hub; default: the local HF cache only; "
                    "--from-folder: files you downloaded), or the copyright task from your "
                    "own text files (copyright --book --retain).")
    s.add_argument("benchmark", choices=["tofu", "muse-news", "copyright"])
    s.add_argument("--name", help="project name (default: tofu-<split> / muse-news)")
    s.add_argument("--split", choices=["forget01", "forget05", "forget10"],
                   help="TOFU's forget split (default forget10; the matching retain split)")
    s.add_argument("--from-folder", help="a folder with the benchmark's files "
                                         "(<config>.json or <config>/<split>.jsonl ...)")
    s.add_argument("--online", action="store_true",
                   help="allow downloading from the Hugging Face hub")
    s.add_argument("--book", help="copyright: the book as a UTF-8 text file")
    s.add_argument("--retain", dest="retain_text", help="copyright: a retain corpus as a "
                                                         "UTF-8 text file")
    s.add_argument("--model", default="embedded:smollm2",
                   help="copyright: whose tokenizer counts the segments' tokens")
    s.add_argument("--segment-tokens", type=int, default=512,
                   help="copyright: tokens per segment at most (default 512)")
    s.add_argument("--prompt-tokens", type=int, default=200,
                   help="copyright: tokens of each segment's prompt (default 200, FLAT's)")
    s.add_argument("--workspace", help="projects folder (default $SGA_WORKSPACE or "
                                       "./workspace)")
    s.add_argument("--overwrite", action="store_true", help="replace a project of that name")
    s.set_defaults(func=cmd_import)

    s = sub.add_parser("rstar", help="per-sample r* analysis (SPEC 2)",
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

    s = sub.add_parser("project", help="create a project, add evaluation sets (the Data page)",
                       description="Projects live in $SGA_WORKSPACE (default ./workspace), as "
                                   "the browser's do. `create NAME --forget F --retain R "
                                   "--map prompt=question --map response=answer` imports files "
                                   "with other field names (the mapping is kept with the "
                                   "project); `add-set NAME --set my_authors=FILE` adds an "
                                   "evaluation set (a QA set with perturbed answers is a Model "
                                   "Utility component); `show NAME` lists the sets and roles.")
    s.add_argument("action", choices=["create", "add-set", "show", "list"])
    s.add_argument("name", nargs="?")
    s.add_argument("--forget")
    s.add_argument("--retain")
    s.add_argument("--kind", choices=["auto", "qa", "text"], default="auto")
    s.add_argument("--k", type=int, default=4, help="K (default 4)")
    s.add_argument("--set", action="append", metavar="NAME=PATH",
                   help="an evaluation set, repeatable")
    s.add_argument("--replace", action="store_true",
                   help="replace a project (create) or a set (add-set) of the same name")
    s.add_argument("--workspace", help="projects folder (default $SGA_WORKSPACE or "
                                       "./workspace)")
    add_map_flag(s)
    s.set_defaults(func=cmd_project)

    s = sub.add_parser("runs", help="list, show or cancel runs")
    s.add_argument("action", choices=["list", "show", "cancel"])
    s.add_argument("run_id", nargs="?")
    s.add_argument("--runs-dir")
    s.set_defaults(func=cmd_runs)
    return p


def main(argv: list[str] | None = None) -> int:
    from sga_core.data import DataError
    from sga_core.model.loading import ModelError

    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:
        hint = ""
        if args.command == "train":
            from sga_core.methods import REGISTRY

            method = chosen_method(argv)
            if method in REGISTRY:
                flags = [_flag(s["name"]) for s in field_specs(REGISTRY[method].Config)]
                hint = (f" (method {method!r} takes: {', '.join(flags) or 'no settings'}; "
                        f"`train --method {method} --help` lists them)")
        parser.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    try:
        return args.func(args)
    except (ConfigError, DataError, ModelError, ValueError, FileNotFoundError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)  # one line
        return 2
