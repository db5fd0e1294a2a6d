"""``eval``: a run folder or any model on given data, under an evaluation protocol."""

from __future__ import annotations

import sys
from pathlib import Path

from sga_core.cli.flags import (
    PROTOCOL_CHOICES,
    _eval_progress,
    add_map_flag,
    field_map,
    parse_sets,
    protocol_overrides,
)
from sga_core.params import ConfigError


def cmd_eval(args) -> int:
    """Evaluate a run folder or a model. SIGTERM (Cancel on the Runs page, a scheduler) or
    the end of a foreground caller (``runs.procs.CALLER_ENV``) stops it as cancelled."""
    from sga_core.evaluation.common import EvalCancelled
    from sga_core.runs.launch import sigterm_as_interrupt

    try:
        with sigterm_as_interrupt():
            return _evaluate(args)
    except (KeyboardInterrupt, EvalCancelled) as exc:
        print(f"evaluation cancelled{f': {exc}' if str(exc) else ''}", file=sys.stderr)
        return 130


def _progress():
    """:func:`_eval_progress`, which also stops the evaluation once its foreground caller
    is gone (killed outright: it could not stop it itself)."""
    from sga_core.evaluation.common import EvalCancelled
    from sga_core.runs.procs import caller_gone, foreground_caller

    show, caller = _eval_progress(), foreground_caller()

    def progress(stage: str, done: int, total: int) -> None:
        if caller_gone(caller):
            raise EvalCancelled(f"its foreground caller (pid {caller['pid']}) exited")
        show(stage, done, total)

    return progress


def _evaluate(args) -> int:
    import os

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sga_core.evaluation import EvalSettings, evaluate_model, evaluate_run, format_summary
    from sga_core.runs.folder import PER_SAMPLE, SUMMARY, RunFolder, runs_root

    target = Path(args.target).expanduser()
    if not target.exists() and RunFolder(runs_root(args.runs_dir) / args.target).exists():
        target = runs_root(args.runs_dir) / args.target  # a run id
    sets = parse_sets(args.set)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
    fmap = field_map(args)
    if RunFolder(target).exists():
        if fmap:
            raise ConfigError("--map: a run folder's data already has the workbench's field "
                              "names; map an evaluation set's fields when adding it to a "
                              "project (python -m sga_core project add-set ... --map)")
        if args.forget or args.retain:
            raise ConfigError("--forget/--retain: a run folder is evaluated on its own data "
                              "(its config); give a model folder to evaluate other data")
        overrides = {"sets": sets, "reference": args.reference,
                     "max_new_tokens": args.max_new_tokens,
                     "max_retain_rows": args.max_retain_rows, "max_rows": args.max_rows,
                     "batch_size": args.batch_size,
                     "device": args.device, **protocol_overrides(args)}
        summary = evaluate_run(target, _progress(), overrides=overrides, out_dir=args.out)
        out = Path(args.out) if args.out else RunFolder(target).eval_dir
    else:
        if not args.forget or not args.out:
            raise ConfigError(f"{args.target} is not a run folder: evaluating a model needs "
                              "--forget, --retain and --out")
        ov = protocol_overrides(args)
        settings = EvalSettings(
            max_new_tokens=args.max_new_tokens, max_retain_rows=args.max_retain_rows,
            max_rows=args.max_rows or 0, batch_size=args.batch_size or 16,
            max_length=args.max_length or 256,
            system_prompt=args.system_prompt, dtype=args.dtype, device=args.device or "auto",
            protocol=ov.get("protocol") or "demo", prompt_format=ov.get("prompt_format"),
            lm_eval_tasks=tuple(ov.get("lm_eval_tasks") or ()),
            lm_eval_limit=ov.get("lm_eval_limit"), lm_eval_include=ov.get("lm_eval_include"),
            retrained_auc=ov.get("retrained_auc"), layer_view=ov.get("layer_view", True),
            tuned_lens=ov.get("tuned_lens"),
            mia_gradnorm=bool(ov.get("mia_gradnorm")))
        forget, retain = args.forget, args.retain
        if fmap:  # rows under the workbench's names (the files stay as they are)
            from sga_core.data import load_dataset

            forget = load_dataset(forget, kind=args.task, field_map=fmap).rows
            retain = load_dataset(retain, field_map=fmap).rows if retain else None
            sets = {n: load_dataset(p, field_map=fmap).rows for n, p in sets.items()}
        summary = evaluate_model(args.target, args.out, forget, retain, sets,
                                 args.reference, task=args.task, settings=settings,
                                 progress=_progress())
        out = Path(args.out)
    print(format_summary(summary))
    print(f"wrote {out / SUMMARY} and {out / PER_SAMPLE}")
    return 0


def add_parsers(sub, argv: list[str] | None = None) -> None:
    """Add this module's commands to the subparsers ``sub``."""
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
                   help="an extra evaluation set, repeatable (QA: real_authors, world_facts, "
                        "holdout; text: holdout, forget_qa, retain_qa)")
    s.add_argument("--reference", help="retain-reference model or run folder, or a retain "
                                       "model's open-unlearning eval log (TOFU_EVAL.json, "
                                       "MUSE_EVAL.json) (Forget Quality / PrivLeak)")
    s.add_argument("--out", help="output folder (required for a model; default for a run: "
                                 "RUN_DIR/eval)")
    s.add_argument("--max-new-tokens", type=int, help="tokens per QA answer (default 48)")
    s.add_argument("--max-retain-rows", type=int,
                   help="evaluate at most N retain rows, evenly spaced (default 40; 0 = all)")
    s.add_argument("--max-rows", type=int,
                   help="evaluate at most N rows of every set (QA or text), evenly spaced, "
                        "the reference's value on the same rows; the results say 'n of N "
                        "rows' (default: the run's eval.max_rows; 0 = all)")
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
    s.add_argument("--no-layer-view", dest="layer_view", action="store_false", default=None,
                   help="skip the layer view (eval/layers.jsonl: each forget answer token at "
                        "every layer, the logit lens; costly for long text continuations on "
                        "a CPU)")
    s.add_argument("--tuned-lens", help="read the layer view through this tuned lens (a "
                                        "folder as the tuned-lens package saves one: "
                                        "config.json, params.pt) instead of the logit lens")
    s.add_argument("--mia-gradnorm", action="store_true", default=None,
                   help="also the GradNorm attack's AUC and PrivLeak (one forward and "
                        "backward pass per forget and holdout row)")
    add_map_flag(s)
    s.set_defaults(func=cmd_eval)
