"""Typed configuration of a run (SPEC 5's config.yaml): the data, training, launch and evaluation
parts, and the method's own settings (validated by the method's ``Config``). Field metadata
comes from :func:`sga_core.params.param`, so a new option or method needs no page edits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sga_core.params import ConfigError, from_dict, param, to_dict

RUN_ID_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
GROUP_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# what evaluation during training measures (catalog names); eval_metric picks the best step
STEP_METRICS = ("forget_quality", "forget_probability", "forget_truth_ratio", "forget_rouge",
                "retain_probability", "retain_truth_ratio", "retain_rouge")


def valid_run_id(text) -> bool:
    """Whether ``text`` is a whole run id (SPEC 5): no path, no trailing newline."""
    return isinstance(text, str) and RUN_ID_RE.fullmatch(text) is not None


# ---------------------------------------------------------------------------------------------


@dataclass
class DataConfig:
    task: str = param("qa", "Data kind: 'qa' (question/answer rows) or 'text'.",
                      choices=("qa", "text"))
    forget: str = param("", "Forget data file (.json/.jsonl/.csv/.parquet).")
    retain: str | None = param(None, "Retain data file (needed by GradDiff, KL, NPO, IDK, "
                                     "prepare).")
    normals: str | None = param(None, "Normal answers (JSONL, SPEC 3) for SGA.")


@dataclass
class TrainingArgs:
    lr: float = param(1e-5, "Learning rate (AdamW).", min=0.0, max=1.0, label="learning rate")
    epochs: float = param(3.0, "Passes over the forget set (ignored when max_steps > 0).",
                          min=0.0, max=1000.0)
    max_steps: int = param(0, "Stop after this many optimizer steps (0 = use epochs).",
                           min=0, max=10_000_000)
    batch_size: int = param(8, "Forget samples per optimizer step, over all processes.",
                            min=1, max=4096)
    grad_accum: int = param(1, "Gradient accumulation: micro-batches per optimizer step.",
                            min=1, max=1024, advanced=True)
    seed: int = param(0, "Random seed (data order, initialisation of anything random).",
                      min=0, max=2**31 - 1)
    seeds: str = param("", "Repeat over seeds, as one group: a count (3 = seed, seed+1, "
                           "seed+2) or a list (0, 1, 2); empty = one run with `seed`.",
                       label="repeat over seeds")
    weight_decay: float = param(0.0, "AdamW weight decay.", min=0.0, max=1.0, advanced=True)
    warmup_steps: int = param(0, "Linear learning-rate warm-up steps.", min=0, max=100000,
                              advanced=True)
    scheduler: str = param("constant", "Learning-rate schedule after warm-up.",
                           choices=("constant", "linear", "cosine"), advanced=True)
    max_grad_norm: float = param(1.0, "Clip the gradient norm to this (0 = no clipping).",
                                 min=0.0, max=1e6, advanced=True)
    max_length: int = param(256, "Truncate sequences to this many tokens.", min=8,
                            max=131072, advanced=True)
    group_by_length: bool = param(True, "Batch samples of similar length (less padding).",
                                  advanced=True)
    log_every: int = param(1, "Write metrics.jsonl every N steps.", min=1, max=100000)
    probe_every: int = param(1, "Write per-token probabilities of the probe samples every N "
                                "steps (0 = only at start and end).", min=0, max=100000)
    probe_rows: list[int] = param([], "Forget rows (0-based) to probe token by token; empty "
                                      "= the first `probe_count` rows.")
    probe_count: int = param(3, "How many probe rows when probe_rows is empty.", min=0,
                             max=64)
    system_prompt: str | None = param(None, "System prompt for chat templates (None = the "
                                            "template's default).", advanced=True)
    dtype: str = param("float32", "Weights dtype when loading the model.",
                       choices=("float32", "bfloat16", "float16"), advanced=True)
    save_model: bool = param(True, "Save the final model into the run folder.")
    eval_nll: bool = param(True, "Measure the mean answer NLL of all forget and retain rows "
                                 "before and after training (status.json nll_before/after).")
    diverge_loss: float = param(0.0, "Also stop as 'diverged' when |loss| exceeds this "
                                     "(0 = only on non-finite loss).", min=0.0, max=1e12,
                                advanced=True)
    # evaluation during training (sga_core.train.eval_steps): a cheap subset every N steps
    eval_every: int = param(0, "Evaluate a cheap subset every N steps (and at steps 0 and the "
                               "last) into eval_steps.jsonl: forget/retain probability and "
                               "truth ratio, Forget Quality against the reference's cached "
                               "truth ratios, ROUGE-L on a few rows. QA data; 0 = off.",
                            min=0, max=1_000_000, label="evaluate every N steps")
    eval_forget_rows: int = param(0, "Forget rows scored by each evaluation during training, "
                                     "evenly spaced (0 = all).", min=0, max=10_000_000,
                                  advanced=True)
    eval_retain_rows: int = param(10, "Retain rows scored by each evaluation during "
                                      "training, evenly spaced (0 = all).", min=0,
                                  max=10_000_000, advanced=True)
    eval_rouge_rows: int = param(4, "Forget and retain rows answered greedily for ROUGE-L by "
                                    "each evaluation during training (0 = no ROUGE).", min=0,
                                 max=10_000, advanced=True)
    eval_metric: str = param("forget_quality", "The metric that marks the best evaluated step "
                                               "(by its direction; ties: the earliest step).",
                             choices=STEP_METRICS, advanced=True)
    keep_best: bool = param(False, "Keep the model of the best evaluated step in best_model/ "
                                   "(saved again each time the best improves).", advanced=True)


@dataclass
class LaunchConfig:
    num_processes: int = param(1, "Processes (GPUs, or CPU workers with --cpu).", min=1,
                               max=1024)
    mixed_precision: str = param("no", "Accelerate mixed precision.",
                                 choices=("no", "fp16", "bf16"))
    cpu: bool = param(True, "Force CPU (set false on GPU machines).")
    config_file: str | None = param(None, "An accelerate config file (DeepSpeed, FSDP, "
                                          "multi-node); overrides the flags above.")
    main_process_port: int = param(0, "Rendezvous port for several processes (0 = pick a "
                                      "free one).", min=0, max=65535, advanced=True)


# --- evaluation settings (sga_core.evaluation) -------------------------------------------------
@dataclass
class EvalConfig:
    """How a run is evaluated after it completes (``python -m sga_core eval RUN_DIR``).

    Paths (``reference``, ``sets``) are relative to the config file's folder, like the data
    paths; :meth:`TrainConfig.validate` turns them into absolute paths, so the config.yaml
    written into a run folder names the original files (they are not snapshotted: evaluation
    runs where the files are, and a re-run keeps pointing at them).
    """

    enabled: bool = param(True, "Evaluate the run automatically when it completes "
                                "(eval/summary.json, eval/per_sample.jsonl).",
                          label="evaluate when done")
    reference: str | None = param(None, "Retain-reference model folder, or its run folder "
                                        "(prepare's <name>-retain-ref), for Forget Quality "
                                        "(QA) and PrivLeak (text).")
    sets: dict = param({}, "Extra evaluation sets, name -> file. QA: real-world utility sets "
                           "(real_authors, world_facts). Text: holdout, forget_qa, "
                           "retain_qa.")
    max_new_tokens: int = param(48, "Tokens generated per QA answer (greedy). Text VerbMem "
                                    "continuations always use 128 (MUSE).", min=1, max=4096)
    max_retain_rows: int = param(40, "Evaluate at most this many retain rows: an evenly "
                                     "spaced, deterministic subset (TOFU likewise evaluates "
                                     "a retain subset); 0 = all.", min=0, max=10_000_000)
    batch_size: int = param(16, "Sequences per forward pass when scoring, prompts per "
                                "batch when generating.", min=1, max=4096, advanced=True)


# ---------------------------------------------------------------------------------------------


@dataclass
class TrainConfig:
    run_id: str = ""
    model: str = "embedded:smollm2"
    method: str = "sga"
    method_args: dict = field(default_factory=dict)
    data: DataConfig = field(default_factory=DataConfig)
    training: TrainingArgs = field(default_factory=TrainingArgs)
    launch: LaunchConfig = field(default_factory=LaunchConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    sweep: str | None = None
    group: str | None = None  # runs of one configuration over several seeds share it
    notes: str = ""
    base_dir: str = field(default="", metadata={"internal": True})

    def resolve(self, path: str | None) -> Path | None:
        """Resolve a data path relative to the config file's folder."""
        if not path:
            return None
        p = Path(path).expanduser()
        return p if p.is_absolute() or not self.base_dir else Path(self.base_dir) / p

    def method_config(self):
        from sga_core.methods import get_method

        return from_dict(get_method(self.method).Config, self.method_args, "method_args.")

    def validate(self) -> TrainConfig:
        if self.run_id and not valid_run_id(self.run_id):
            raise ConfigError(f"run_id: {self.run_id!r} must match {RUN_ID_RE.pattern}")
        from sga_core.methods import get_method

        try:
            method = get_method(self.method)
        except KeyError as exc:
            raise ConfigError(f"method: {exc.args[0]}") from None
        self.method_args = to_dict(self.method_config())
        if not self.data.forget:
            raise ConfigError("data.forget: a forget data file is required")
        for need in method.needs:
            if need in ("retain", "normals") and not getattr(self.data, need):
                raise ConfigError(f"data.{need}: method {self.method!r} needs {need} data")
        self._absolute_eval_paths()
        self._check_seeds()
        return self

    def _check_seeds(self) -> None:
        from sga_core.stats import parse_seeds

        try:
            parse_seeds(self.training.seeds, self.training.seed)
        except ValueError as exc:
            raise ConfigError(f"training.{exc}") from None
        if self.group is not None and not GROUP_RE.fullmatch(str(self.group)):
            raise ConfigError(f"group: {str(self.group)[:80]!r} must be 1-100 letters, digits, "
                              "'.', '_' or '-'")

    def _absolute_eval_paths(self) -> None:
        """Check ``eval.sets`` and make the eval paths absolute (relative ones are relative to
        the config file's folder, or the working directory when there is none), so a config
        copied into a run folder still names the same files. ``eval.reference`` is only
        treated as a path when it exists or starts with '/', '.' or '~' (else a model id)."""
        import os

        ev = self.eval
        if not isinstance(ev.sets, dict):
            raise ConfigError("eval.sets: expected a mapping name -> file")
        sets = {}
        for name, path in ev.sets.items():
            if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9_-]{1,64}$", name):
                raise ConfigError(f"eval.sets: set name {name!r} must be 1-64 letters, digits, "
                                  "'_' or '-'")
            if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
                raise ConfigError(f"eval.sets.{name}: expected a file path, got {path!r}")
            sets[name] = str(Path(os.path.abspath(self.resolve(str(path)))))
        ev.sets = sets
        ref = (ev.reference or "").strip() or None
        if ref is not None:
            p = self.resolve(ref)
            if p.exists() or ref.startswith(("/", ".", "~")):
                ref = os.path.abspath(p)
        ev.reference = ref

    def to_dict(self) -> dict:
        d = to_dict(self)
        d.pop("base_dir")
        return d

    @classmethod
    def from_dict(cls, data: dict, base_dir: str | Path = "") -> TrainConfig:
        data = dict(data)
        data.pop("base_dir", None)
        cfg = from_dict(cls, data)
        cfg.base_dir = str(base_dir)
        return cfg.validate()


def load_config(path: str | Path) -> TrainConfig:
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a mapping")
    return TrainConfig.from_dict(data, base_dir=path.resolve().parent)


def dump_config(cfg: TrainConfig) -> str:
    import yaml

    return yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True)
