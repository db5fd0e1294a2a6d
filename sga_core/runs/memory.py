"""Memory of local jobs: about how much a training run needs, whether it fits in the memory
left (the local queue starts a run only then, and says why not), and what a run killed by
the kernel is told (docs/runs.md#memory).

The estimate is from the model's config.json (no weights are loaded) and the run's config:
weights, gradients and AdamW's two moments (LoRA: the adapters only), the reference copy of
methods that keep one, the activations of the largest micro-batch (``batch_size /
grad_accum`` units x their sequences x ``max_length`` tokens; with gradient checkpointing one
layer's and each layer's input) and the loss's logits (bounded by
:data:`~sga_core.model.fusedloss.LOSS_BOUND` unless ``fused_loss: off``). It is calibrated on
SmolLM2-135M on the CPU (bench/text_memory.py) and errs high.
"""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path

GB = 1024 ** 3
# bytes a CPU training process holds besides the model (Python, torch, tokenizer, data)
BASE_BYTES = int(0.6 * GB)
# activation floats kept per token and layer without checkpointing (calibrated on SmolLM2:
# about 8 x hidden + 3.3 x intermediate)
ACT_HIDDEN, ACT_INTERMEDIATE = 8.0, 3.3


def model_dims(spec: str) -> dict | None:
    """The model's shape from its config.json (a local folder, or the embedded model once
    converted); None when it cannot be read without loading or downloading anything."""
    from sga_core.model.loading import EMBEDDED_MODELS, cache_dir, is_embedded

    folder = None
    if is_embedded(spec):
        name = spec.split(":", 1)[1] if ":" in spec else ""
        if name in EMBEDDED_MODELS:
            found = sorted((cache_dir() / "models").glob(f"{EMBEDDED_MODELS[name][1]}-*"))
            folder = found[-1] if found else None
    elif Path(spec).is_dir():
        folder = Path(spec)
    if folder is None or not (folder / "config.json").is_file():
        return None
    try:
        c = json.loads((folder / "config.json").read_text())
        c = c.get("text_config", c) if isinstance(c, dict) else {}
        h = int(c["hidden_size"])
        heads = int(c.get("num_attention_heads") or 1)
        dims = {"vocab": int(c["vocab_size"]), "hidden": h,
                "layers": int(c["num_hidden_layers"]),
                "intermediate": int(c.get("intermediate_size") or 4 * h),
                "kv": int(c.get("num_key_value_heads") or heads) * (h // heads)}
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError, AttributeError):
        return None
    if any(v <= 0 for v in dims.values()):
        return None  # nonsense sizes: no estimate
    return {**dims, "tied": bool(c.get("tie_word_embeddings", False))}


def n_params(d: dict) -> int:
    h, i = d["hidden"], d["intermediate"]
    layer = h * (2 * h + 2 * d["kv"]) + 3 * h * i + 2 * h
    return d["layers"] * layer + d["vocab"] * h * (1 if d["tied"] else 2)


# tokens of a QA sequence, for the estimate (its rows are rarely near max_length; a text
# set's segments fill it)
QA_TOKENS = 128


def step_tokens(cfg) -> int:
    """About the most tokens one micro-batch of ``cfg``'s training holds (from the config,
    without reading the data: text sequences of ``max_length``)."""
    t = cfg.training
    units = math.ceil(t.batch_size / max(1, t.grad_accum))
    try:
        per_unit = int(getattr(cfg.method_config(), "k", 0) or 2)
    except Exception:  # noqa: BLE001 - a method config the run itself will refuse
        per_unit = 2
    length = int(t.max_length) if cfg.data.task == "text" else min(int(t.max_length),
                                                                    QA_TOKENS)
    return units * per_unit * length


def checkpointing(cfg) -> bool:
    """Whether a run of ``cfg`` trains with gradient checkpointing: asked for, or turned on
    by the trainer for a micro-batch over
    :data:`~sga_core.model.lora.CHECKPOINT_TOKENS` tokens."""
    from sga_core.model.lora import CHECKPOINT_TOKENS

    return bool(cfg.training.gradient_checkpointing) or step_tokens(cfg) > CHECKPOINT_TOKENS


def training_bytes(cfg, dims: dict | None = None) -> int | None:
    """About how many bytes a local training run of ``cfg`` needs at its peak (None: the
    model's shape is unknown)."""
    from sga_core.model.fusedloss import LOSS_BOUND

    d = dims or model_dims(cfg.model)
    if d is None:
        return None
    t = cfg.training
    p = n_params(d)
    width = 2 if t.dtype in ("bfloat16", "float16") else 4
    lora = int(t.lora_rank or 0) > 0
    trained = (d["layers"] * 7 * t.lora_rank * (d["hidden"] + d["intermediate"])) if lora else p
    state = p * width + trained * (width + 8)
    try:
        from sga_core.methods import get_method

        ref = "reference" in getattr(get_method(cfg.method), "needs", ()) and not lora
    except Exception:  # noqa: BLE001
        ref = False
    tokens = step_tokens(cfg)
    per_layer = (ACT_HIDDEN * d["hidden"] + ACT_INTERMEDIATE * d["intermediate"]) * 4
    if checkpointing(cfg):
        act = tokens * (d["layers"] * d["hidden"] * 4 + per_layer)
    else:
        act = tokens * d["layers"] * per_layer
    logits = tokens * d["vocab"]
    if t.fused_loss != "off":
        logits = min(logits, LOSS_BOUND)
    return int(BASE_BYTES + state + (p * width if ref else 0) + act + 3 * 4 * logits)


def machine_bytes() -> tuple[int | None, int | None]:
    """``(total, available)`` memory of this machine, or of its cgroup where that is less."""
    info = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            k, _, v = line.partition(":")
            info[k] = int(v.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None, None
    total, avail = info.get("MemTotal"), info.get("MemAvailable")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        if limit != "max" and total and int(limit) < total:
            total = int(limit)
            avail = min(avail or total, total - used)
    except (OSError, ValueError):
        pass
    return total, avail


def gb(n: float) -> str:
    return f"{n / GB:.1f} GB"


def run_need(run_dir: str | os.PathLike) -> int | None:
    """About how many bytes the run in ``run_dir`` needs (None: unknown)."""
    return run_estimate(run_dir)[0]


def run_estimate(run_dir: str | os.PathLike) -> tuple[int | None, str | None]:
    """``(bytes, data task)`` of the run in ``run_dir``; ``(None, None)`` when unknown."""
    from sga_core.runs.folder import RunFolder

    try:
        cfg = RunFolder(run_dir).config()
        device = str(cfg.launch.device)
        if cfg.launch.num_processes > 1 or device.startswith("cuda") or \
                (device == "auto" and Path("/dev/nvidia0").exists()):
            return None, None  # GPU memory and multi-process runs are not estimated here
        return training_bytes(cfg), cfg.data.task
    except Exception:  # noqa: BLE001 - a broken config fails when the run starts
        return None, None


def admission(run_dir: str | os.PathLike, others_running: int) -> tuple[str, str] | None:
    """Whether a queued run may start now: None (yes), ``("wait", why)`` (not while other
    jobs hold the memory it needs) or ``("refuse", why)`` (it cannot fit: it is failed with
    the reason instead of being started and killed by the kernel). A QA run's estimate
    assumes rows of up to 128 tokens, which most are far below, so only a text run (its
    sequences fill ``max_length``) waits or is refused for the memory free now; any run is
    refused when it needs more than the machine has."""
    need, task = run_estimate(run_dir)
    total, avail = machine_bytes()
    if need is None or total is None:
        return None
    hint = ("lower training.batch_size or training.max_length, or use LoRA "
            "(training.lora_rank)")
    if need > total:
        return "refuse", (f"not started: it needs about {gb(need)} of memory and this "
                          f"machine has {gb(total)}; {hint}")
    if avail is not None and need > avail and task == "text":
        if others_running:
            return "wait", (f"waiting for memory: it needs about {gb(need)}, "
                            f"{gb(avail)} is free while other jobs run")
        return "refuse", (f"not started: it needs about {gb(need)} of memory and only "
                          f"{gb(avail)} is free (other programs hold the rest); {hint}")
    return None


def exit_cause(returncode: int, run_dir: str | os.PathLike | None = None) -> str:
    """How a process ended, in words: a SIGKILL nobody asked for is the kernel's
    out-of-memory killer's, said with the memory the run needed."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    sig = -returncode
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    if sig != signal.SIGKILL:
        return f"was killed by signal {sig} ({name})"
    from sga_core.runs.folder import CANCEL_FILE

    if run_dir is not None and (Path(run_dir) / CANCEL_FILE).exists():
        return "was killed by signal 9 (SIGKILL) after a cancel request"
    need = run_need(run_dir) if run_dir is not None else None
    total, _ = machine_bytes()
    if need and total:
        return (f"was killed by the kernel (signal 9), most likely out of memory: the run "
                f"needed about {gb(need)} and this machine has {gb(total)}, shared with "
                f"the other jobs and programs")
    return ("was killed by signal 9 (SIGKILL), most likely out of memory: the kernel's "
            "out-of-memory killer ends a process that way")


def admit(run_dir: str | os.PathLike, others_running: int) -> bool:
    """The local queue's check before it starts a queued run (:func:`admission`): True to
    start it; else the run stays queued with ``waiting_for`` saying why (while other jobs
    hold the memory) or is failed with the reason (it cannot fit), and False."""
    from sga_core.fileio import now_iso
    from sga_core.runs import status as run_status

    verdict = admission(run_dir, others_running)
    st = run_status.read_run(run_dir)
    if verdict is None:
        if st.get("waiting_for"):
            run_status.write_run(run_dir, waiting_for=None)
        return True
    kind, why = verdict
    if kind == "refuse":
        run_status.write_run(run_dir, "failed", ended_at=now_iso(), error=why,
                             waiting_for=None)
    elif st.get("waiting_for") != why:
        run_status.write_run(run_dir, waiting_for=why)
    return False
