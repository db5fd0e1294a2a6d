"""Typed configuration objects. One set of dataclasses drives the CLI flags, the browser
forms and ``config.yaml`` (in the manner of H2O LLM Studio): each field carries its help text
and bounds in ``metadata``, so a new option or method needs no page edits.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

RUN_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


class ConfigError(ValueError):
    """A configuration value that is missing, unknown or out of range; names the key."""


def param(default: Any, help: str, *, min: float | None = None, max: float | None = None,
          choices: tuple | None = None, label: str | None = None, advanced: bool = False):
    """A dataclass field with the metadata that forms and CLI flags are built from."""
    meta = {"help": help, "min": min, "max": max, "choices": choices, "label": label,
            "advanced": advanced}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda d=default: type(d)(d), metadata=meta)
    return field(default=default, metadata=meta)


def type_kind(typ) -> str:
    """'bool', 'int', 'float', 'str', 'list' or 'dict' for an annotation (Optional unwrapped)."""
    text = typ.__name__ if isinstance(typ, type) else str(typ)
    for kind in ("bool", "int", "float", "str", "list", "dict"):
        if text == kind or text.startswith(kind + "[") or text.startswith(kind + " "):
            return kind
    return "str"


def field_specs(cls) -> list[dict]:
    """Describe a config dataclass for form builders: name, type, kind, optional, default,
    help and bounds."""
    hints = get_type_hints(cls)
    specs = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        typ = hints[f.name]
        specs.append({"name": f.name, "type": typ, "kind": type_kind(typ),
                      "optional": "None" in str(typ), "default": default, **f.metadata})
    return specs


def _coerce(value: Any, typ: Any, key: str) -> Any:
    """Coerce YAML/CLI values to the annotated type, with an error naming the key."""
    text = str(typ)
    optional = "None" in text or "Optional" in text
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{key}: a value is required")
    try:
        if typ is bool or text.startswith("bool"):
            if isinstance(value, str):
                low = value.strip().lower()
                if low in ("true", "1", "yes", "on"):
                    return True
                if low in ("false", "0", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if typ is int or text.startswith("int"):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if typ is float or text.startswith("float"):
            return float(value)
        if typ is str or text.startswith("str"):
            return str(value)
        if text.startswith("list"):
            if isinstance(value, str):
                value = [v for v in re.split(r"[,\s]+", value.strip()) if v]
            inner = int if "int" in text else float if "float" in text else str
            return [inner(v) for v in value]
    except (TypeError, ValueError):
        raise ConfigError(f"{key}: cannot read {value!r} as {text}") from None
    return value


def validate_fields(obj, prefix: str = "") -> None:
    """Check bounds and choices declared in field metadata."""
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        key = f"{prefix}{f.name}"
        if v is None or isinstance(v, bool):
            continue
        lo, hi, choices = f.metadata.get("min"), f.metadata.get("max"), f.metadata.get("choices")
        if choices is not None and v not in choices:
            raise ConfigError(f"{key}: {v!r} is not one of {list(choices)}")
        if isinstance(v, (int, float)):
            if v != v:
                raise ConfigError(f"{key}: NaN is not allowed")
            if lo is not None and v < lo:
                raise ConfigError(f"{key}: {v} is below the minimum {lo}")
            if hi is not None and v > hi:
                raise ConfigError(f"{key}: {v} is above the maximum {hi}")


def from_dict(cls, data: dict | None, prefix: str = ""):
    """Build dataclass ``cls`` from a dict: unknown keys and bad values raise ConfigError."""
    data = dict(data or {})
    hints = get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{prefix}{unknown[0]}: unknown setting (known: {sorted(names)})")
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        typ = hints[f.name]
        if dataclasses.is_dataclass(typ):
            kwargs[f.name] = from_dict(typ, data[f.name], f"{prefix}{f.name}.")
        else:
            kwargs[f.name] = _coerce(data[f.name], typ, f"{prefix}{f.name}")
    obj = cls(**kwargs)
    validate_fields(obj, prefix)
    return obj


def to_dict(obj) -> dict:
    return dataclasses.asdict(obj)


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


# --- evaluation settings (sga_core.evaluate) -------------------------------------------------
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
        if self.run_id and not RUN_ID_RE.match(self.run_id):
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
        return self

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
