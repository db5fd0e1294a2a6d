"""Published checkpoints as a project's Original or Retained model: a Hugging Face hub id
(``open-unlearning/tofu_Llama-3.2-1B-Instruct_full``), found in the local HF cache, or a
folder (docs/guide/published-models.md).

Offline by default, as the rest of the workbench's hub access: a hub id resolves through the
local cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``, read as
files: nothing here imports torch, transformers or huggingface_hub, so the pages can check
a spec); it is downloaded only when ``online`` is given. A folder (or the cached snapshot)
must be a loadable causal LM: ``config.json`` naming a causal-LM architecture, its weights
(every shard its index names) and its tokenizer; what is wrong is said with the file.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from sga_core.model.loading import ModelError, is_embedded

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")


@dataclass(frozen=True)
class Published:
    """A published model as a project names it: ``spec`` (what was given), ``source``
    ('hub id' or 'folder') and ``path``, the folder it loads from (a hub id's cached
    snapshot)."""

    spec: str
    source: str
    path: Path

    def describe(self) -> str:
        if self.source == "hub id":
            return f"published {self.spec} (local HF cache: {self.path})"
        return str(self.path)


def hub_cache() -> Path:
    """The local Hugging Face hub cache, as ``huggingface_hub`` finds it."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface"
    return Path(home).expanduser() / "hub"


def cached_snapshot(repo_id: str) -> Path | None:
    """The cached snapshot folder of a hub model (its ``refs/main`` commit, else its only
    or newest snapshot); None when the cache does not hold it."""
    repo = hub_cache() / f"models--{repo_id.replace('/', '--')}"
    snaps = repo / "snapshots"
    ref = repo / "refs" / "main"
    if ref.is_file():
        commit = ref.read_text(encoding="utf-8", errors="replace").strip()
        if commit and (snaps / commit).is_dir():
            return snaps / commit
    found = sorted((p for p in snaps.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime) \
        if snaps.is_dir() else []
    return found[-1] if found else None


def _file_problem(folder: Path, name: str) -> str | None:
    """Why ``folder/name`` is not a readable file (a cache link whose blob is missing)."""
    p = folder / name
    if p.is_symlink() and not p.exists():
        return f"{name} is a link to a file that is not there (an interrupted download?)"
    if not p.is_file():
        return f"{name} is missing"
    return None


def _config_problems(folder: Path) -> list[str]:
    why = _file_problem(folder, "config.json")
    if why:
        return [why + " (a Hugging Face model folder holds config.json, its weights and its "
                      "tokenizer)"]
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return [f"config.json cannot be read as JSON ({exc})"]
    if not isinstance(cfg, dict):
        return ["config.json must hold an object"]
    archs = cfg.get("architectures")
    if isinstance(archs, list) and archs and not any(
            isinstance(a, str) and a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        return [f"config.json names {', '.join(map(str, archs))}, not a causal language "
                "model (an architecture ending in ForCausalLM)"]
    if not archs and not cfg.get("model_type"):
        return ["config.json names neither its architectures nor its model_type"]
    return []


def _weight_problems(folder: Path) -> list[str]:
    for index in WEIGHT_INDEXES:
        if (folder / index).exists() or (folder / index).is_symlink():
            why = _file_problem(folder, index)
            if why:
                return [why]
            try:
                shards = set((json.loads((folder / index).read_text(encoding="utf-8"))
                              .get("weight_map") or {}).values())
            except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
                return [f"{index} cannot be read as a weight index ({exc})"]
            if not shards:
                return [f"{index} names no weight files"]
            missing = [w for s in sorted(shards) if (w := _file_problem(folder, s))]
            return missing[:3] + ([f"... and {len(missing) - 3} more shards"]
                                  if len(missing) > 3 else [])
    for name in WEIGHT_FILES:
        if (folder / name).exists() or (folder / name).is_symlink():
            why = _file_problem(folder, name)
            return [why] if why else []
    if any(folder.glob("*.safetensors")):
        return []
    return [f"no weights ({' or '.join(WEIGHT_FILES)}, or a sharded index)"]


def model_folder_problems(folder: str | os.PathLike) -> list[str]:
    """What keeps ``folder`` from loading as a causal LM with its tokenizer ([] = nothing);
    each problem names its file."""
    folder = Path(folder)
    if not folder.is_dir():
        return [f"{folder} is not a folder"]
    if (folder / "adapter_config.json").is_file() and not (folder / "config.json").exists():
        return ["it is a LoRA adapter (adapter_config.json): give the full model"]
    problems = _config_problems(folder)
    problems += _weight_problems(folder)
    if not any((folder / t).exists() for t in TOKENIZER_FILES) and \
            not (folder / "tokenizer_config.json").is_file():
        problems.append(f"no tokenizer ({' or '.join(TOKENIZER_FILES)} with "
                        "tokenizer_config.json)")
    return problems


def _download(repo_id: str) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:  # pragma: no cover - installed with transformers
        raise ModelError(f"cannot download {repo_id}: huggingface_hub is missing ({exc})") \
            from None
    try:
        return Path(snapshot_download(repo_id, cache_dir=str(hub_cache())))
    except Exception as exc:  # noqa: BLE001 - the hub's own errors, said in one line
        raise ModelError(f"cannot download {repo_id} from the Hugging Face hub: "
                         f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") \
            from None


def published_model(spec: str, online: bool = False, role: str = "model") -> Published:
    """Resolve and check a published model: a folder, or a hub id in the local HF cache
    (downloaded when ``online``). ModelError says what is wrong, where, and the fix."""
    spec = str(spec or "").strip()
    if not spec:
        raise ModelError(f"{role}: give a hub id (org/name) or a model folder")
    if is_embedded(spec):
        raise ModelError(f"{role}: {spec} is the base model, not a published {role} (it "
                         "was never fine-tuned on the project's data)")
    path = Path(spec).expanduser()
    try:
        exists = path.exists()
    except OSError as exc:  # a name the system refuses (too long, ...)
        raise ModelError(f"{role}: {spec[:80]!r}: {exc.strerror or exc}") from None
    if exists or spec.startswith((".", "/", "~")):
        if not exists:
            raise ModelError(f"{role}: the folder {spec} does not exist")
        found, source = path.resolve(), "folder"
    elif HUB_ID.match(spec):
        found, source = cached_snapshot(spec), "hub id"
        if found is None:
            if not online:
                raise ModelError(
                    f"{role}: {spec} is not in the local Hugging Face cache ({hub_cache()}) "
                    "and downloads are off. Fix: allow downloads (the CLI's --online), "
                    f"or run `huggingface-cli download {spec}` once, "
                    "or give the folder it is in")
            found = _download(spec)
    else:
        raise ModelError(f"{role}: {spec!r} is neither a folder on this machine nor a hub "
                         "id (org/name)")
    problems = model_folder_problems(found)
    if problems:
        where = f"{spec} (local HF cache: {found})" if source == "hub id" else str(found)
        raise ModelError(f"{role}: {where} is not a loadable causal language model: "
                         + "; ".join(problems))
    return Published(spec, source, found)
