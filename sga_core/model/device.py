"""Where a run trains: ``launch.device`` (``auto``, ``cpu`` or ``gpu``) and
``launch.mixed_precision`` (``auto``, ``no``, ``fp16``, ``bf16``), resolved when the run
starts, on the machine that runs it.

A run folder's ``config.yaml`` and ``command.sh`` are written on the workbench's machine and
may be run on a GPU node of a cluster, so neither fixes the device: ``auto`` means the GPU
when the machine that runs the command has one (with bf16 autocast when that GPU supports
bf16), the CPU otherwise. ``cpu`` forces the CPU (``--cpu``); ``gpu`` insists on a GPU and
fails with a clear message where there is none. Old configs' ``launch.cpu: true`` reads as
``device: cpu`` and ``launch.cpu: false`` as ``device: auto`` (:func:`fold_legacy_cpu`).

:func:`resolve` needs torch (the trainer calls it); :func:`describe` and :func:`gpu_hint` do
not, so the browser can say what ``auto`` will mean without importing torch.
"""

from __future__ import annotations

import glob
import os
import shutil
from dataclasses import dataclass

DEVICES = ("auto", "cpu", "gpu")
PRECISIONS = ("auto", "no", "fp16", "bf16")


class DeviceError(RuntimeError):
    """A device setting the machine cannot serve (``gpu`` without a GPU)."""


@dataclass(frozen=True)
class Resolved:
    """What a run uses on this machine."""

    use_cpu: bool
    mixed_precision: str | None  # None: the accelerate config file decides
    device: str  # "cpu" or "cuda"
    why: str

    def words(self) -> str:
        mp = self.mixed_precision or "from the accelerate config"
        return f"{self.device} (mixed precision {mp}; {self.why})"


def legacy_device(cpu: bool | None, device: str = "auto") -> str:
    """The device an old ``cpu: true/false`` stands for: true = cpu; false = auto where the
    device was left at cpu (old false meant "the GPU when there is one")."""
    if cpu is None:
        return device
    return "cpu" if cpu else ("auto" if device == "cpu" else device)


def fold_legacy_cpu(launch) -> None:
    """Fold an old ``cpu`` into ``device`` of a LaunchConfig, or of a dict (a preset's
    launch section); ``cpu`` is cleared so new files never write it."""
    if isinstance(launch, dict):
        if "cpu" in launch:
            launch["device"] = legacy_device(launch.pop("cpu"), launch.get("device", "auto"))
        return
    launch.device = legacy_device(launch.cpu, launch.device)
    launch.cpu = None


def cuda_state() -> tuple[bool, bool]:
    """(a CUDA GPU is usable, it supports bf16)."""
    import torch

    if not torch.cuda.is_available():
        return False, False
    return True, bool(torch.cuda.is_bf16_supported())


def resolve(device: str = "auto", mixed_precision: str = "auto", *,
            config_file: str | None = None, state: tuple[bool, bool] | None = None
            ) -> Resolved:
    """The device and mixed precision of a run on this machine. ``state`` (has_gpu, bf16)
    replaces the probe of this machine (tests)."""
    if device not in DEVICES:
        raise DeviceError(f"launch.device: {device!r} is not one of {list(DEVICES)}")
    if mixed_precision not in PRECISIONS:
        raise DeviceError(f"launch.mixed_precision: {mixed_precision!r} is not one of "
                          f"{list(PRECISIONS)}")
    has_gpu, bf16 = cuda_state() if state is None else state
    if device == "gpu" and not has_gpu:
        raise DeviceError("launch.device is 'gpu' but this machine has no usable CUDA GPU "
                          f"({os.uname().nodename}); use device 'auto' or 'cpu'")
    use_cpu = device == "cpu" or not has_gpu
    if device == "cpu":
        why = "forced by launch.device: cpu"
    elif use_cpu:
        why = "no GPU on this machine"
    else:
        why = "a GPU is present" if device == "auto" else "launch.device: gpu"
    if mixed_precision != "auto":
        mp: str | None = mixed_precision
    elif config_file:
        mp = None  # the accelerate config file's mixed_precision applies
    else:
        mp = "bf16" if (not use_cpu and bf16) else "no"
    if use_cpu and mp == "fp16":
        raise DeviceError("launch.mixed_precision fp16 needs a GPU; on the CPU use 'no' or "
                          "'bf16'")
    return Resolved(use_cpu, mp, "cpu" if use_cpu else "cuda", why)


def gpu_hint() -> str | None:
    """The GPU names of this machine, found without torch (the NVIDIA driver's files or
    nvidia-smi); None when there is none."""
    names = []
    for info in sorted(glob.glob("/proc/driver/nvidia/gpus/*/information")):
        try:
            with open(info, encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("Model:"):
                        names.append(line.split(":", 1)[1].strip())
        except OSError:
            continue
    if names:
        return ", ".join(names)
    return "an NVIDIA GPU (nvidia-smi found)" if shutil.which("nvidia-smi") else None


def describe(device: str = "auto", mixed_precision: str = "auto",
             config_file: str | None = None, gpu: str | None | bool = False) -> str:
    """The device setting in words, for the Train page and ``command.sh``; ``gpu``: what
    :func:`gpu_hint` says of this machine (False: not asked)."""
    mp = {"auto": "bf16 autocast where the GPU supports it", "no": "no mixed precision",
          "fp16": "fp16 autocast", "bf16": "bf16 autocast"}.get(mixed_precision,
                                                                mixed_precision)
    if config_file:
        mp += " (or as the accelerate config file says)" if mixed_precision == "auto" else ""
    text = {"auto": f"auto: the GPU when the machine that runs it has one ({mp}), else the "
                    "CPU",
            "cpu": "cpu (forced)",
            "gpu": f"gpu ({mp}); fails on a machine without one"}.get(device, device)
    if gpu is not False and device != "cpu":
        text += f"; this machine: {gpu or 'no GPU found, so the CPU'}"
    return text
