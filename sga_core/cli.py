"""``python -m sga_core <command>``: everything the browser does, from the shell (SPEC 8)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from sga_core.config import ConfigError, LaunchConfig, TrainingArgs, field_specs

ASSETS = Path(__file__).resolve().parent.parent / "assets"
DEMO_DIR = ASSETS / "demo"
PRESETS_DIR = ASSETS / "presets"


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_dataclass_flags(parser: argparse.ArgumentParser, cls, dest_prefix: str,
                        seen: set[str] | None = None) -> None:
    """One flag per field, help from the field's metadata; unset flags stay None."""
    seen = set() if seen is None else seen
    for spec in field_specs(cls):
        name = spec["name"]
        if name in seen:
            continue
        seen.add(name)
        typ = str(spec["type"])
        help_text = f"{spec.get('help') or ''} (default: {spec['default']!r})"
        kwargs = {"dest": f"{dest_prefix}{name}", "default": None, "help": help_text}
        if typ.startswith("bool"):
            parser.add_argument(_flag(name), action=argparse.BooleanOptionalAction, **kwargs)
        else:
            if spec.get("choices"):
                kwargs["choices"] = list(spec["choices"])
            parser.add_argument(_flag(name), metavar=name.upper(), **kwargs)


def collect(args: argparse.Namespace, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in vars(args).items()
            if k.startswith(prefix) and v is not None}


# ------------------------------------------------------------------------------------------

def cmd_demo_data(args) -> int:
    from sga_core.demo import write_demo

    paths = write_demo(args.out_dir)
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0


def cmd_normals(args) -> int:
    from sga_core.data import load_dataset

    forget = load_dataset(args.forget, kind=args.task)
    if args.backend == "idk":
        from sga_core.normals.idk import idk_normals

        table = idk_normals(len(forget), args.k, seed=args.seed)
    else:
        raise ConfigError(f"--backend {args.backend}: not available in this build")
    table.save(args.out)
    print(f"wrote {len(table)} normal answers ({args.k - 1} per forget row) to {args.out}")
    problems = table.problems(len(forget))
    for p in problems:
        print(f"warning: {p}", file=sys.stderr)
    return 0


def build_train_config(args) -> dict:
    """Merge a preset file (``--preset``) with the flags given on the command line."""
    import yaml

    base: dict = {}
    if args.preset:
        base = yaml.safe_load(Path(args.preset).read_text()) or {}
        if not isinstance(base, dict):
            raise ConfigError(f"{args.preset}: a preset must be a YAML mapping")
    base = json.loads(json.dumps(base))  # deep copy
    for key in ("model", "method", "run_id", "sweep", "notes"):
        if getattr(args, key, None) is not None:
            base[key] = getattr(args, key)
    base.setdefault("data", {}).update(collect(args, "data."))
    base.setdefault("training", {}).update(collect(args, "training."))
    base.setdefault("launch", {}).update(collect(args, "launch."))
    margs = collect(args, "margs.")
    if margs:
        base.setdefault("method_args", {})
        from sga_core.methods import get_method

        method = base.get("method", "sga")
        known = {f.name for f in dataclasses.fields(get_method(method).Config)}
        bad = sorted(set(margs) - known)
        if bad:
            raise ConfigError(f"{_flag(bad[0])}: not a setting of method {method!r} "
                              f"(its settings: {sorted(known) or 'none'})")
        base["method_args"].update(margs)
    if args.demo:
        demo_defaults(base, args)
    return base


def demo_defaults(base: dict, args) -> None:
    """Fill what the demo needs: its data, the prepared original model, IDK normals."""
    from sga_core.runs import runs_root

    data = base.setdefault("data", {})
    data.setdefault("forget", str(DEMO_DIR / "forget.jsonl"))
    data.setdefault("retain", str(DEMO_DIR / "retain.jsonl"))
    if "model" not in base or args.model is None:
        original = runs_root(args.runs_dir) / "demo-original" / "model"
        if not (original / "config.json").exists():
            raise ConfigError("--demo: no prepared model at "
                              f"{original}; run `python -m sga_core prepare --demo` first")
        base["model"] = str(original)


def cmd_train(args) -> int:
    import tempfile

    from sga_core.config import TrainConfig
    from sga_core.launch import run_foreground
    from sga_core.runs import create_run

    base = build_train_config(args)
    with tempfile.TemporaryDirectory(prefix="sga-normals-") as tmp:
        if (base.get("method", "sga") == "sga" and not base["data"].get("normals")
                and args.idk_normals and base["data"].get("forget")):
            base["data"]["normals"] = write_idk_normals(base, Path(tmp) / "normals.jsonl")
        cfg = TrainConfig.from_dict(base, base_dir=Path.cwd())
        run_dir = create_run(cfg, args.runs_dir)  # snapshots the normals into the run
    print(f"run folder: {run_dir}")
    print(f"command:    {(run_dir / 'command.sh').read_text().splitlines()[-1]}")
    if args.no_launch:
        return 0
    status = run_foreground(run_dir)
    print(f"state: {status.get('state')}" + (f" ({status['error']})"
                                              if status.get("error") else ""))
    return 0 if status.get("state") in ("completed", "cancelled", "diverged") else 1


def write_idk_normals(base: dict, out: Path) -> str:
    """Generate K-1 'I don't know' normals per forget row for a config dict."""
    from sga_core.data import load_dataset
    from sga_core.normals.idk import idk_normals

    k = int(base.get("method_args", {}).get("k", 4))
    forget = load_dataset(Path(base["data"]["forget"]).expanduser(),
                          kind=base["data"].get("task", "qa"))
    seed = int(base.get("training", {}).get("seed", 0))
    idk_normals(len(forget), k, seed=seed).save(out)
    return str(out)


def cmd_prepare(args) -> int:
    from sga_core.prepare import prepare

    forget = args.forget or (str(DEMO_DIR / "forget.jsonl") if args.demo else None)
    retain = args.retain or (str(DEMO_DIR / "retain.jsonl") if args.demo else None)
    if not forget or not retain:
        raise ConfigError("prepare needs --forget and --retain (or --demo)")
    results = prepare(forget=forget, retain=retain, model=args.model, name=args.name,
                      runs_dir=args.runs_dir, training=collect(args, "training."),
                      launch=collect(args, "launch."), task=args.task, which=args.which)
    print(json.dumps(results, indent=2))
    return 0 if all(r["state"] == "completed" for r in results.values()) else 1


def cmd_runs(args) -> int:
    from sga_core import runs

    root = runs.runs_root(args.runs_dir)
    if args.action == "list":
        rows = runs.list_runs(root)
        if not rows:
            print(f"no runs in {root}")
        for r in rows:
            prog = f"{r['step']}/{r['total_steps']}" if r.get("total_steps") else ""
            print(f"{r['run_id']:48s} {r['state']:10s} {r['method'] or '':9s} "
                  f"r={r['r'] if r['r'] is not None else '-':<6} {prog}")
        return 0
    if not args.run_id:
        raise ConfigError(f"runs {args.action}: give a RUN_ID")
    run_dir = root / args.run_id
    if not (run_dir / "config.yaml").exists():
        raise ConfigError(f"no run {args.run_id!r} in {root}")
    if args.action == "show":
        print(json.dumps(runs.effective_status(run_dir), indent=2))
        m = runs.metrics(run_dir)
        if m:
            print("last metrics:", json.dumps(m[-1]))
        return 0
    if args.action == "cancel":
        runs.request_cancel(run_dir)
        print(f"cancel requested for {args.run_id} (it stops at the next step)")
        return 0
    raise ConfigError(f"unknown action {args.action}")


# ------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    from sga_core.methods import _REGISTRY, method_names

    p = argparse.ArgumentParser(prog="python -m sga_core",
                                description="SGA Workbench: LLM unlearning with smoothed "
                                            "gradient ascent.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("demo-data", help="write the demo corpus")
    s.add_argument("out_dir")
    s.set_defaults(func=cmd_demo_data)

    s = sub.add_parser("normals", help="generate normal answers")
    s.add_argument("--backend", choices=["idk"], default="idk")
    s.add_argument("--forget", required=True)
    s.add_argument("--task", choices=["auto", "qa", "text"], default="auto")
    s.add_argument("--k", type=int, default=4, help="K (K-1 normal answers per row)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", required=True, help="output JSONL")
    s.set_defaults(func=cmd_normals)

    s = sub.add_parser("train", help="create a run folder and launch it",
                       description="Create runs/<run_id>/ (config.yaml, command.sh, data "
                                   "snapshot) and run `accelerate launch -m sga_core.train`.")
    s.add_argument("--preset", help="a YAML config/preset to start from")
    s.add_argument("--model", help="HF model id, local folder, or embedded:smollm2")
    s.add_argument("--method", choices=method_names())
    s.add_argument("--run-id")
    s.add_argument("--sweep", help="group name for runs of one sweep")
    s.add_argument("--notes")
    s.add_argument("--runs-dir", help="runs folder (default $SGA_RUNS_DIR or ./runs)")
    s.add_argument("--demo", action="store_true",
                   help="use the demo data and the model from `prepare --demo`")
    s.add_argument("--idk-normals", action=argparse.BooleanOptionalAction, default=True,
                   help="for SGA without --normals, generate 'I don't know' normals")
    s.add_argument("--no-launch", action="store_true", help="only create the run folder")
    from sga_core.config import DataConfig

    add_dataclass_flags(s, DataConfig, "data.")
    add_dataclass_flags(s, TrainingArgs, "training.")
    add_dataclass_flags(s, LaunchConfig, "launch.")
    seen: set[str] = set()
    for cls in _REGISTRY.values():
        add_dataclass_flags(s, cls.Config, "margs.", seen)
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
    add_dataclass_flags(s, TrainingArgs, "training.")
    add_dataclass_flags(s, LaunchConfig, "launch.")
    s.set_defaults(func=cmd_prepare)

    s = sub.add_parser("runs", help="list, show or cancel runs")
    s.add_argument("action", choices=["list", "show", "cancel"])
    s.add_argument("run_id", nargs="?")
    s.add_argument("--runs-dir")
    s.set_defaults(func=cmd_runs)
    return p


def main(argv: list[str] | None = None) -> int:
    from sga_core.data import DataError
    from sga_core.models import ModelError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, DataError, ModelError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
