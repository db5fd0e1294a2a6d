"""LoRA adapters (peft) for every method, and gradient checkpointing.

With ``training.lora_rank > 0`` the loaded model gets LoRA adapters (``training.lora_targets``:
every linear layer but the head by default) and only they are trained. Methods with a
reference model (KL, NPO, DPO) then need no second copy: the reference is the same model with
its adapters disabled (:func:`adapters_off`), which is exactly the starting model.

A LoRA run saves its adapter as the run's ``model/`` folder (``adapter_config.json``, the
adapter weights, the tokenizer and :data:`BASE_FILE`, which names the base model spec);
:func:`sga_core.model.loading.load_model` loads such a folder as base + adapter, so evaluation,
probes and later runs take it like any model folder. ``training.save_merged`` also writes the
merged full model into ``model-merged/``
(:func:`sga_core.model.loading.merge_adapter`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path

ADAPTER_CONFIG = "adapter_config.json"
BASE_FILE = "sga_base.json"


def is_adapter_dir(path: str | os.PathLike) -> bool:
    p = Path(path)
    return (p / ADAPTER_CONFIG).is_file() and not (p / "config.json").is_file()


def lora_targets(text: str):
    """``all-linear`` or a comma-separated list of module names."""
    text = (text or "all-linear").strip()
    if text == "all-linear":
        return text
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise ValueError("training.lora_targets: give 'all-linear' or module names "
                         "(q_proj,v_proj)")
    return names


def enable_checkpointing(model) -> None:
    """Gradient checkpointing of the transformer blocks (non-reentrant), with the inputs
    requiring gradients so that frozen embeddings (LoRA) still let gradients through."""
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.enable_input_require_grads()
    model.config.use_cache = False


#: tokens in one micro-batch above which training turns gradient checkpointing on by itself:
#: each layer's activations for them would be gigabytes (SmolLM2 on 16 text sequences of
#: 1,024 tokens: about 19 GB without, under 4 GB with; bench/text_memory.py)
CHECKPOINT_TOKENS = 8192


def micro_batch_tokens(units, batch_size: int, grad_accum: int = 1) -> int:
    """The most padded tokens one micro-batch of ``units`` can hold: its largest units,
    each as many sequences as it has, padded to its longest."""
    per = math.ceil(max(1, batch_size) / max(1, grad_accum))
    sizes = sorted((len(u.seqs) * u.max_len for u in units), reverse=True)
    return sum(sizes[:per])


def for_training(model, training, tokens: int = 0):
    """The loaded model made ready for training: no KV cache, gradient checkpointing and
    LoRA adapters when ``training`` asks for them; gradient checkpointing also when a
    micro-batch holds more than :data:`CHECKPOINT_TOKENS` ``tokens`` (text batches; the
    numbers are the same, the step about a third slower)."""
    model.config.use_cache = False
    if training.gradient_checkpointing or tokens > CHECKPOINT_TOKENS:
        enable_checkpointing(model)
    return apply_lora(model, training) if training.lora_rank else model


def apply_lora(model, training):
    """The model with fresh LoRA adapters from ``training`` (lora_rank, lora_alpha,
    lora_dropout, lora_targets); only the adapters require gradients."""
    from peft import LoraConfig, get_peft_model

    cfg = LoraConfig(r=int(training.lora_rank), lora_alpha=float(training.lora_alpha),
                     lora_dropout=float(training.lora_dropout),
                     target_modules=lora_targets(training.lora_targets),
                     task_type="CAUSAL_LM", bias="none")
    return get_peft_model(model, cfg)


def peft_model(model):
    """The PeftModel inside accelerate / DDP wrappers, or None."""
    from sga_core.model.labelhead import unwrap

    inner = unwrap(model)
    return inner if hasattr(inner, "disable_adapter") and hasattr(inner, "peft_config") \
        else None


@contextlib.contextmanager
def adapters_off(model):
    """The model as it was before training: adapters disabled, eval mode (no dropout)."""
    pm = peft_model(model)
    if pm is None:
        raise ValueError("adapters_off needs a model with LoRA adapters")
    was_training = model.training
    model.eval()
    try:
        with pm.disable_adapter():
            yield model
    finally:
        if was_training:
            model.train()


def save_adapter(model, folder: str | os.PathLike, base_spec: str, base_path: str,
                 state_dict=None) -> None:
    """Write the adapter (and the base model's spec) into ``folder``."""
    folder = Path(folder)
    peft_model(model).save_pretrained(folder, state_dict=state_dict, safe_serialization=True)
    (folder / BASE_FILE).write_text(json.dumps({"spec": base_spec, "path": base_path},
                                               indent=2), encoding="utf-8")


def base_of(folder: str | os.PathLike) -> str:
    """The base model an adapter folder was trained on: the spec it names (an embedded
    model, a hub id, a folder), or peft's ``base_model_name_or_path``."""
    folder = Path(folder)
    try:
        info = json.loads((folder / BASE_FILE).read_text(encoding="utf-8"))
        if info.get("spec"):
            return str(info["spec"])
    except (OSError, ValueError):
        pass
    cfg = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    return str(cfg.get("base_model_name_or_path") or "")


def load_with_adapter(base_model, folder: str | os.PathLike, merge: bool = True):
    """The base model with the adapter of ``folder``; ``merge`` folds it into the weights
    (a plain model again, as fast as the base)."""
    from peft import PeftModel

    model = PeftModel.from_pretrained(base_model, str(folder))
    return model.merge_and_unload() if merge else model
