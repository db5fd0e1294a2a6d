"""The environment record of a run (``RUN_DIR/env.json``): what a result was computed with.

Package versions (from the installed distributions, nothing imported), Python and the
platform, torch with its CUDA and cuDNN versions, the GPU names, the workbench's git commit
(and whether its tree had uncommitted changes), the seed, and the device, precision and
process count the run resolved to. Written once by the trainer's main process at start.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from sga_core.runs.folder import ENV

ENV_FILE = ENV  # RunFolder's name
PACKAGES = ("torch", "transformers", "accelerate", "tokenizers", "safetensors", "peft",
            "deepspeed", "liger-kernel", "datasets", "numpy", "scipy", "sentence-transformers",
            "rouge-score", "streamlit", "sga-workbench")
ROOT = Path(__file__).resolve().parents[2]


def package_versions(names=PACKAGES) -> dict[str, str | None]:
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_commit(root: str | os.PathLike = ROOT) -> dict:
    """The workbench's commit and whether its tracked files differ from it; None values
    when the code is not a git checkout (an installed copy)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                              text=True, timeout=10)

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {"commit": None, "dirty": None}
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return {"commit": head.stdout.strip(),
                "dirty": bool(dirty.stdout.strip()) if dirty.returncode == 0 else None}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def torch_info() -> dict:
    import torch

    info = {"torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": None, "gpus": [], "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        info["cudnn"] = torch.backends.cudnn.version()
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    info["threads"] = torch.get_num_threads()
    return info


def environment_record(seed: int, **run) -> dict:
    """The record: ``run`` adds what the run resolved (device, mixed precision, processes)."""
    return {"python": sys.version.split()[0], "platform": platform.platform(),
            "host": platform.node(), "packages": package_versions(), **torch_info(),
            "workbench": git_commit(), "seed": seed, **run}


def write_env_record(run_dir: str | os.PathLike, seed: int, **run) -> dict:
    from sga_core.fileio import atomic_write_json

    rec = environment_record(seed, **run)
    atomic_write_json(Path(run_dir) / ENV_FILE, rec)
    return rec
