"""Typed configuration of a run (``config.yaml``, docs/spec.md#52-files): the data, training, launch
and evaluation parts, and the method's own settings (validated by the method's ``Config``). Field
metadata comes from :func:`sga_core.params.param`, so a new option or method needs no page edits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sga_core.model.device import DEVICES, PRECISIONS, fold_legacy_cpu
from sga_core.model.fusedloss import MODES as FUSED_MODES
from sga_core.params import ConfigError, from_dict, param, parse_seeds, to_dict
from sga_core.protocols import protocol_names

RUN_ID_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
#: :data:`RUN_ID_RE` in words
RUN_ID_RULE = ("use lowercase letters, digits and '-' only (no '.', '_', spaces or capitals), "
               f"starting with a letter or digit, at most 64 characters (the pattern "
               f"{RUN_ID_RE.pattern})")
GROUP_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# what evaluation during training measures (catalog names); eval_metric picks the best step
STEP_METRICS = ("forget_quality", "forget_probability", "forget_truth_ratio", "forget_rouge",
                "retain_probability", "retain_truth_ratio", "retain_rouge")


def name_problem(name, longest: int = 100) -> str | None:
    """What is wrong with a sweep or group name (None: nothing, or no name): 1-``longest``
    letters, digits, '.', '_' or '-', starting with a letter or digit (no space, no quote,
    no line break: the name goes into SLURM job names and batch scripts)."""
    if name is None:
        return None
    if not isinstance(name, str) or not GROUP_RE.fullmatch(name) or len(name) > longest:
        return (f"{str(name)[:80]!r} must be 1-{longest} letters, digits, '.', '_' or '-', "
                "starting with a letter or digit (no spaces)")
    return None


def valid_run_id(text) -> bool:
    """Whether ``text`` is a whole run id (docs/spec.md#51-run-ids-and-the-runs-folder): no path, no
    trailing newline."""
    return isinstance(text, str) and RUN_ID_RE.fullmatch(text) is not None


# ---------------------------------------------------------------------------------------------


@dataclass
class DataConfig:
    task: str = param("qa", "Data kind: 'qa' (question/answer rows) or 'text'.",
                      choices=("qa", "text"))
    forget: str = param("", "Forget data file (.json/.jsonl/.csv/.parquet).")
    retain: str | None = param(None, "Retain data file (needed by GradDiff, KL, NPO, IDK, "
                                     "prepare).")
    normals: str | None = param(None, "Normal answers (JSONL, docs/spec.md#33-normal-answers) "
                                      "for SGA.")
    field_map: dict = param({}, "Rename the forget and retain files' fields first, file "
                                "field -> workbench field ({prompt: question, response: "
                                "answer}; CLI: --map prompt=question). The run's data/ "
                                "snapshot holds the renamed rows.")


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

    def settings_problem(self) -> str | None:
        from sga_core.train.trackers import names_problem

        if self.max_steps == 0 and self.epochs <= 0:
            return (f"epochs: {self.epochs!r} trains no step; give at least one pass (e.g. "
                    "epochs 0.5 or 1), or a number of steps with max_steps")
        return names_problem(self.report_to)
    system_prompt: str | None = param(None, "System prompt for chat templates (None = the "
                                            "template's default).", advanced=True)
    dtype: str = param("float32", "Weights dtype when loading the model.",
                       choices=("float32", "bfloat16", "float16"), advanced=True)
    save_model: bool = param(True, "Save the final model into the run folder.")
    eval_nll: bool = param(True, "Measure the mean answer NLL of the forget and retain rows "
                                 "before and after training (status.json nll_before/after; "
                                 "the Runs page shows its progress), on at most nll_rows "
                                 "rows of each set.")
    nll_rows: int = param(200, "Rows of each set (forget, retain) that the NLL before/after "
                               "scores, evenly spaced (0 = all): a bound on the minutes it "
                               "takes on a CPU with thousands of retain rows (all 2,174 rows "
                               "of a MUSE-Books import took about an hour before step 1).",
                          min=0, max=10_000_000, label="NLL rows per set")
    diverge_loss: float = param(0.0, "Also stop as 'diverged' when |loss| exceeds this "
                                     "(0 = only on non-finite loss).", min=0.0, max=1e12,
                                advanced=True)
    # --- large models (docs/decisions/003-label-position-head.md): LoRA, gradient checkpointing, a
    # fused loss
    lora_rank: int = param(0, "LoRA rank: train low-rank adapters instead of all weights "
                              "(0 = full fine-tuning). Reference-model methods then use the "
                              "base model with the adapters off (no second copy).",
                           min=0, max=4096, advanced=True)
    lora_alpha: float = param(16.0, "LoRA alpha (the adapters' scale is alpha / rank).",
                              min=0.0, max=1e6, advanced=True)
    lora_dropout: float = param(0.0, "Dropout on the LoRA adapters' input.", min=0.0,
                                max=0.9, advanced=True)
    lora_targets: str = param("all-linear", "Modules that get adapters: 'all-linear' (every "
                                            "linear layer but the head) or names "
                                            "(q_proj,v_proj).", advanced=True)
    save_merged: bool = param(False, "LoRA: also save the merged full model "
                                     "(model-merged/); model/ always holds the adapter.",
                              advanced=True)
    gradient_checkpointing: bool = param(False, "Recompute activations in the backward pass: "
                                                "much less memory for long sequences "
                                                "(text tasks up to 2048 tokens), about a "
                                                "third more compute.", advanced=True)
    fused_loss: str = param("auto", "Training loss over the head: 'off' (logits of the "
                                    "scored tokens, one cross-entropy), 'chunked' (head + "
                                    "cross-entropy per chunk, recomputed in the backward "
                                    "pass), 'liger' (liger-kernel, GPU), 'auto' (liger on a "
                                    "GPU where installed, else off below 64 Mi logits a "
                                    "batch and chunked above: text batches).",
                            choices=FUSED_MODES,
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
    # long runs (docs/long-runs.md): checkpoints to resume from, experiment trackers
    save_every: int = param(0, "Save a checkpoint every N steps into checkpoints/ (model or "
                               "adapter, optimizer, scheduler, random states, position in the "
                               "data order), to resume from (train --resume). 0 = only when "
                               "stopped by SIGTERM/SIGUSR1.", min=0, max=10_000_000,
                            advanced=True, label="checkpoint every N steps")
    keep_checkpoints: int = param(1, "How many checkpoints to keep (the newest).", min=1,
                                  max=10_000, advanced=True)
    report_to: list[str] = param([], "Experiment trackers that also receive the run's losses "
                                     "and evaluations: none, tensorboard (into the run "
                                     "folder's tensorboard/), wandb, mlflow, or several "
                                     "(tensorboard, wandb).", advanced=True,
                                 label="report to")


@dataclass
class LaunchConfig:
    num_processes: int = param(1, "Processes (GPUs, or CPU workers on the CPU).", min=1,
                               max=1024)
    device: str = param("auto", "Where training runs, decided when the run starts on the "
                                "machine that runs it: 'auto' = the GPU when there is one, "
                                "else the CPU; 'cpu' forces the CPU (--cpu); 'gpu' fails "
                                "without one.", choices=DEVICES)
    mixed_precision: str = param("auto", "Accelerate mixed precision; 'auto' = bf16 autocast "
                                         "on a GPU that supports it, none on the CPU (or the "
                                         "accelerate config file's).", choices=PRECISIONS)
    cpu: bool | None = param(None, "Force the CPU: the same as --device cpu (old configs' "
                                   "launch.cpu; --no-cpu = device auto).", hidden=True)
    config_file: str | None = param(None, "An accelerate config file (DeepSpeed, FSDP, "
                                          "multi-node); overrides the flags above.")
    main_process_port: int = param(0, "Rendezvous port for several processes (0 = pick a "
                                      "free one).", min=0, max=65535, advanced=True)

    def settings_problem(self) -> str | None:
        cf = self.config_file
        if cf is not None and (not cf.isprintable() or len(cf) > 4096):
            return (f"config_file: {ascii(cf[:80])} is not a file path (a line break or a "
                    "control character, or over 4096 characters)")
        return None


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
                                        "(prepare's <name>-retain-ref), or a retain model's "
                                        "open-unlearning eval log (TOFU_EVAL.json, "
                                        "MUSE_EVAL.json), for Forget Quality (QA) and "
                                        "PrivLeak (text).")
    sets: dict = param({}, "Extra evaluation sets, name -> file. QA: real-world utility sets "
                           "(real_authors, world_facts). Text: holdout, forget_qa, "
                           "retain_qa.")
    protocol: str = param("demo", "Evaluation protocol: 'demo' (fast settings of its own, "
                                  "not comparable with published tables), 'tofu', 'muse' or "
                                  "'copyright' (the benchmarks' own protocols; README).",
                          choices=protocol_names())
    max_new_tokens: int = param(48, "Demo protocol: tokens generated per QA answer (greedy). "
                                    "The benchmark protocols use their own (TOFU 200, MUSE "
                                    "KnowMem 32; VerbMem always 128).", min=1, max=4096)
    max_retain_rows: int = param(40, "Demo protocol: evaluate at most this many retain rows, "
                                     "an evenly spaced, deterministic subset; 0 = all. The "
                                     "benchmark protocols evaluate all.", min=0,
                                 max=10_000_000)
    max_rows: int = param(0, "Evaluate at most this many rows of every set (QA: forget, "
                             "retain, the extra sets; text: forget, holdout, retain, KnowMem "
                             "questions, extra sets), an evenly spaced, deterministic "
                             "subset, the reference's value on the same rows: quicker on a "
                             "CPU, with intervals as wide as the rows allow; the results "
                             "say 'n of N rows'. max_retain_rows applies after it. 0 = all "
                             "(the protocol's).", min=0, max=10_000_000)
    prompt_format: str = param("protocol", "How QA questions are wrapped: 'protocol' (its "
                                           "own: the chat template), 'chat' (the tokenizer's "
                                           "template), 'llama2' ([INST] q [/INST], TOFU's "
                                           "Llama-2 models) or 'question-answer' "
                                           "(Question: / Answer:).",
                               choices=("protocol", "chat", "llama2", "question-answer"),
                               advanced=True)
    lm_eval_tasks: list[str] = param([], "Extra lm-evaluation-harness tasks, each an extra "
                                         "utility column (e.g. mmlu); run in-process.")
    lm_eval_limit: float | None = param(None, "At most this many documents per lm-eval task "
                                              "(a fraction below 1); empty = all.", min=0.0,
                                        advanced=True)
    lm_eval_include: str | None = param(None, "A folder of lm-eval task YAML files (local "
                                              "tasks).", advanced=True)
    retrained_auc: float | None = param(None, "PrivLeak against this retrained-model MIA AUC "
                                              "(1 = memorised; MUSE's own published constant "
                                              "is 1 - this) instead of the retain "
                                              "reference's.", min=0.0, max=1.0, advanced=True)
    mia_gradnorm: bool = param(False, "Also the GradNorm membership-inference attack "
                                      "(open-unlearning mia/gradnorm.py): its AUC and "
                                      "PrivLeak cost one forward and one backward pass per "
                                      "forget and holdout row, with gradients as large as the "
                                      "model (and the same for the retain reference, once).",
                               advanced=True)
    batch_size: int = param(16, "Sequences per forward pass when scoring, prompts per "
                                "batch when generating.", min=1, max=4096, advanced=True)
    layer_view: bool = param(True, "Write the layer view (eval/layers.jsonl): each forget "
                                   "answer token read at every layer by the logit lens, for "
                                   "Token probabilities. It applies the head once per layer "
                                   "to every answer token (on a CPU, text projects' long "
                                   "continuations make it costly); false = skip it.",
                             advanced=True)
    tuned_lens: str | None = param(None, "A tuned lens for the layer view instead of the "
                                         "logit lens: a folder as the tuned-lens package "
                                         "saves or publishes one (config.json and params.pt "
                                         "or params.safetensors) for this model's size; "
                                         "blank = the logit lens.", advanced=True)
    in_process: bool = param(True, "Evaluate inside the training process, with the model "
                                   "already loaded (one process per run); false = a separate "
                                   "`python -m sga_core eval` process afterwards (runs over "
                                   "several processes always use one).", advanced=True)


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
            raise ConfigError(f"run_id: {self.run_id!r}: {RUN_ID_RULE}")
        from sga_core.methods import get_method

        try:
            method = get_method(self.method)
        except KeyError as exc:
            raise ConfigError(f"method: {exc.args[0]}") from None
        self.method_args = to_dict(self.method_config())
        if not self.data.forget:
            raise ConfigError("data.forget: a forget data file is required")
        self._check_field_map()
        for need in method.needs:
            if need in ("retain", "normals") and not getattr(self.data, need):
                raise ConfigError(f"data.{need}: method {self.method!r} needs {need} data")
        self._resolve_data_paths()
        self._absolute_eval_paths()
        self._check_trackers()
        fold_legacy_cpu(self.launch)
        self._check_seeds()
        return self

    def _check_trackers(self) -> None:
        """``training.report_to`` as a clean list, each tracker installed (before a run
        folder or a training process exists)."""
        from sga_core.train.trackers import chosen, missing

        problem = missing(self.training.report_to)
        if problem:
            raise ConfigError(problem)
        self.training.report_to = chosen(self.training.report_to)

    def _check_field_map(self) -> None:
        from sga_core.data import DataError
        from sga_core.data.mapping import check_map

        if not isinstance(self.data.field_map, dict):
            raise ConfigError("data.field_map: expected a mapping, file field -> workbench "
                              "field (e.g. {prompt: question})")
        try:
            self.data.field_map = check_map(self.data.field_map, self.data.task)
        except DataError as exc:
            raise ConfigError(f"data.field_map: {exc}") from None

    def _check_seeds(self) -> None:
        try:
            parse_seeds(self.training.seeds, self.training.seed)
        except ValueError as exc:
            raise ConfigError(f"training.{exc}") from None
        problem = name_problem(self.group)  # goes into job names, scripts, folders
        if problem:
            raise ConfigError(f"group: {problem}")
        # a sweep name is held to the group rule where a new run is made
        # (runs.create.create_run); on reading, only what no file may hold is refused, so
        # the runs of an older sweep named "my sweep" still load, resume and evaluate (every
        # generated script quotes it)
        if self.sweep is not None and (not isinstance(self.sweep, str) or any(
                ord(c) < 32 or ord(c) == 127 for c in self.sweep) or len(self.sweep) > 200):
            raise ConfigError(f"sweep: {str(self.sweep)[:80]!r} must be text of at most 200 "
                              "characters without line breaks or control characters")

    def _resolve_data_paths(self) -> None:
        """The data files as :meth:`resolve` finds them (relative to the config file's
        folder), so what reads a validated config (the run folder's snapshot) takes the
        paths as they are instead of coming back here for each file. Paths relative to no
        config file stay relative to the working directory, as given."""
        for name in ("forget", "retain", "normals"):
            path = self.resolve(getattr(self.data, name))
            if path is not None:
                setattr(self.data, name, str(path))

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
        if ev.lm_eval_include:
            ev.lm_eval_include = str(os.path.abspath(self.resolve(ev.lm_eval_include)))
        if (ev.tuned_lens or "").strip():
            ev.tuned_lens = str(os.path.abspath(self.resolve(ev.tuned_lens.strip())))
        else:
            ev.tuned_lens = None

    def to_dict(self) -> dict:
        d = to_dict(self)
        d.pop("base_dir")
        if d["launch"].get("cpu") is None:
            d["launch"].pop("cpu", None)  # the old spelling is read, never written
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

    from sga_core.fileio import YAMLTooLarge, load_yaml

    path = Path(path)
    try:
        data = load_yaml(path.read_text(encoding="utf-8"), str(path)) or {}
    except YAMLTooLarge:
        raise
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read config: not UTF-8 text (byte {exc.start})"
                          ) from None
    except RecursionError:
        raise ConfigError(f"{path}: cannot read config: the YAML is nested too deeply"
                          ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a mapping")
    return TrainConfig.from_dict(data, base_dir=path.resolve().parent)


def dump_config(cfg: TrainConfig) -> str:
    import yaml

    return yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True)
