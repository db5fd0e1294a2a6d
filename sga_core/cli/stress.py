"""``stress``: does the forgetting hold? The registered attacks (:mod:`sga_core.stress.attacks`)
on a run folder or a model (docs/stress-tests.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from sga_core.cli.flags import add_dataclass_flags
from sga_core.params import ConfigError

PREFIX = "stress_"


def cmd_stress(args) -> int:
    """Run the attacks; SIGTERM or Ctrl-C stops it (files already written stay whole).
    ``--queue``: queue them as a job instead; ``--cancel``: stop a queued or running one."""
    from sga_core.runs.launch import sigterm_as_interrupt

    check_options(args)
    if args.queue or args.cancel:
        return _queue_or_cancel(args)
    if len(args.target) > 1:
        raise ConfigError("give one run or model to stress-test in the foreground (several "
                          "runs: --queue)")
    args.target = args.target[0]
    try:
        with sigterm_as_interrupt():
            return _stress(args)
    except KeyboardInterrupt:
        print("stress test cancelled", file=sys.stderr)
        return 130


#: the evaluation options' bounds: (flag, attribute, lowest, highest)
OPTION_BOUNDS = (("--batch-size", "batch_size", 1, 4096),
                 ("--max-new-tokens", "max_new_tokens", 0, 4096))


def check_options(args) -> None:
    """The evaluation options given, each within its bounds (ConfigError naming it), before
    anything loads or is queued."""
    for flag, attr, lo, hi in OPTION_BOUNDS:
        value = getattr(args, attr, None)
        if value is not None and not lo <= value <= hi:
            raise ConfigError(f"{flag}: must be {lo} to {hi}, got {value}")


def settings_from_args(args):
    """The StressSettings (:mod:`sga_core.stress.settings`) of the flags given (unset flags
    keep the defaults), checked like a config file's."""
    from sga_core.params import from_dict
    from sga_core.stress.settings import settings_class

    given = {k[len(PREFIX):]: v for k, v in vars(args).items()
             if k.startswith(PREFIX) and v is not None}
    return from_dict(settings_class(), given, "--")


def _stress(args) -> int:
    import os

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sga_core.cli.flags import _eval_progress
    from sga_core.evaluation.settings import EvalSettings
    from sga_core.runs.folder import RunFolder, runs_root
    from sga_core.stress.run import parse_attacks, stress_model, stress_run

    attacks = parse_attacks(args.attacks)
    settings = settings_from_args(args)
    target = Path(args.target).expanduser()
    if not target.exists() and RunFolder(runs_root(args.runs_dir) / args.target).exists():
        target = runs_root(args.runs_dir) / args.target  # a run id
    progress = _eval_progress()
    if RunFolder(target).exists():
        if args.forget or args.retain:
            raise ConfigError("--forget/--retain: a run folder is stress-tested on its own "
                              "data; give a model folder to use other data")
        overrides = {"original": args.original, "retained": args.retained,
                     "max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size,
                     "device": args.device}
        results = stress_run(target, attacks, settings, overrides=overrides,
                             out_dir=args.out, progress=progress)
        from sga_core.runs.folder import STRESS_DIR

        out = Path(args.out) if args.out else target / STRESS_DIR
    else:
        if not args.forget or not args.out:
            raise ConfigError(f"{args.target} is not a run folder: stress-testing a model "
                              "needs --forget and --out (and --original for the recovery)")
        es = EvalSettings(max_new_tokens=args.max_new_tokens, batch_size=args.batch_size or 16,
                          device=args.device or "auto", dtype=args.dtype)
        results = stress_model(args.target, args.out, args.forget, args.retain,
                               original=args.original, attacks=attacks, settings=settings,
                               eval_settings=es, progress=progress, retained=args.retained)
        out = Path(args.out)
    print(format_results(results))
    print(f"wrote {len(results)} file(s) to {out}")
    return 0


def _run_dir(target: str, runs_dir) -> Path:
    """A run folder given as a path or a run id (ConfigError when it is neither)."""
    from sga_core.runs.folder import RunFolder, run_path, runs_root

    path = Path(target).expanduser()
    if RunFolder(path).exists():
        return path.resolve()
    try:
        by_id = run_path(target, runs_dir)
    except ConfigError:
        by_id = None
    if by_id is not None and RunFolder(by_id).exists():
        return by_id
    raise ConfigError(f"{target}: not a run folder (nor a run id in {runs_root(runs_dir)}); "
                      "only a run's stress test can be queued or cancelled")


def _queue_or_cancel(args) -> int:
    """``--queue``: a stress test of each run as a job (the runner, or SLURM for a run
    trained there, starts it; the Runs page follows it); ``--cancel``: stop each one."""
    from sga_core.runs import queue

    if args.queue and args.cancel:
        raise ConfigError("--queue and --cancel: give one of them")
    if args.forget or args.retain or args.out or args.dtype != "float32":
        raise ConfigError("--forget/--retain/--out/--dtype: a queued stress test is of a run "
                          "folder, on its own data, into its stress/ folder")
    runs = [_run_dir(t, args.runs_dir) for t in args.target]
    if args.cancel:
        for run_dir in runs:
            try:
                st = queue.cancel_stress(run_dir)
            except RuntimeError as exc:  # it runs on another machine
                raise ConfigError(str(exc)) from None
            print(f"stress test of {run_dir.name}: {st.get('state') or 'none asked for'}"
                  + (" (stopping: the files written so far stay)"
                     if st.get("state") == "running" else ""))
        return 0
    settings = {k[len(PREFIX):]: v for k, v in vars(args).items()
                if k.startswith(PREFIX) and v is not None}
    options = {"original": args.original, "retained": args.retained,
               "max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size,
               "device": args.device}
    # as Results' "Stress-test runs" offers them (evaluated, with a model, none in
    # progress): a stress test of a run Results does not list would never be shown
    ok, refused = queue.stress_candidates([{"run_id": d.name, "path": str(d)} for d in runs])
    done = queue.queue_stress_tests([d for d in runs if d.name in ok], args.attacks,
                                    settings, options, root=args.runs_dir or runs[0].parent)
    done["skipped"].update({run_id: why + (" (evaluate it first: python -m sga_core "
                                           f"eval {run_id})" if "not evaluated" in why
                                           else "")
                            for run_id, why in refused.items()})
    for run_id in done["queued"]:
        print(f"queued a stress test of {run_id}: the runner starts it when a slot is free "
              f"(follow it on the Runs page; stop it: stress {run_id} --cancel)")
    for run_id, why in done["skipped"].items():
        print(f"skipped {run_id}: {why}", file=sys.stderr)
    return 0 if done["queued"] or not done["skipped"] else 1


def format_results(results: dict) -> str:
    """One line per result: the attacked forget probability and the recovery (with its
    interval where there are several cases, or why it is undefined)."""
    from sga_core.stress.results import recovery_text

    lines = [f"{'attack':<14} {'forget prob':>12}  recovery"]
    for key, res in results.items():
        head = ((res.get("summary") or {}).get("probability") or {})
        prob = (head.get("attacked") or {}).get("mean")
        lines.append(f"{key:<14} {'-' if prob is None else f'{prob:.3f}':>12}  "
                     f"{recovery_text(res)}")
    return "\n".join(lines)


def add_parsers(sub, argv: list[str] | None = None) -> None:
    """Add this module's commands to the subparsers ``sub``."""
    from sga_core.stress.attacks import attacks, default_attacks
    from sga_core.stress.settings import settings_class

    registered = attacks()
    default = ",".join(default_attacks())
    s = sub.add_parser(
        "stress", help="stress-test the forgetting: does it hold under attack?",
        description="Does the forgetting hold? Attack a run's model (or any model) and "
                    "re-score the forget answers: "
                    + "; ".join(f"{c.name}: {c.description}" for c in registered)
                    + ". Each attack writes RUN_DIR/stress/<attack>.json with the forget "
                    "metrics after the attack and the recovery, the share of the unlearning "
                    "gap it closes (0 = held, 1 = all back). See docs/stress-tests.md.")
    s.add_argument("target", metavar="RUN_DIR|MODEL", nargs="+",
                   help="a run folder (or run id), or a model to stress-test (with --queue "
                        "or --cancel: one or more runs)")
    s.add_argument("--queue", action="store_true",
                   help="queue the stress test of each run as a job (like an evaluation: "
                        "the runner starts it when a slot is free, a run trained on SLURM "
                        "gets a SLURM job; progress in RUN_DIR/stress_status.json, output "
                        "in RUN_DIR/stress.log) instead of running it here")
    s.add_argument("--cancel", action="store_true",
                   help="cancel each run's queued or running stress test (a queued one "
                        "never starts; a running one stops, its files written so far kept)")
    s.add_argument("--attacks", default=default,
                   help=f"comma-separated, of: {', '.join(c.name for c in registered)}, or "
                        f"all (default: {default})")
    s.add_argument("--original", help="the model before unlearning (default for a run: its "
                                      "config's model); the recovery's far end")
    s.add_argument("--retained", help="the Retained model, trained without the forget set "
                                      "(default for a run: its eval.reference); the "
                                      "probe's floor")
    s.add_argument("--forget", help="forget data, QA or text (a model only)")
    s.add_argument("--retain", help="retain data, QA or text (a model only: for the attacks "
                                    "that train on retain rows or take examples from them)")
    s.add_argument("--out", help="output folder (required for a model; default for a run: "
                                 "RUN_DIR/stress)")
    s.add_argument("--max-new-tokens", type=int, help="tokens per greedy answer (default: "
                                                      "the evaluation's)")
    s.add_argument("--batch-size", type=int, help="sequences per scoring batch")
    s.add_argument("--device", help="cpu, cuda, ... (default: as the evaluation)")
    s.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32",
                   help="a model only")
    s.add_argument("--runs-dir", help="where to look up a run id")
    add_dataclass_flags(s, settings_class(), PREFIX)
    s.set_defaults(func=cmd_stress)
