"""A tuned lens (Belrose et al. 2023, "Eliciting Latent Predictions from Transformers with the
Tuned Lens"), read from the folder the ``tuned-lens`` package saves or publishes
(AlignmentResearch/tuned-lens, ``TunedLens.save``): ``config.json`` (``d_model``,
``num_hidden_layers``, ``bias``, ``lens_type`` ``linear_tuned_lens``) and the translators'
weights, ``params.pt`` (a ``torch.save``d state dict ``{"<i>.weight": [H, H], "<i>.bias":
[H]}``, read with ``weights_only``: tensors, never objects) or ``params.safetensors``.

Translator ``i`` reads hidden state ``i`` of the model (``hidden_states[i]``: ``i = 0`` the
embeddings, ``i = l`` block ``l``'s output), as ``h + W_i h + b_i`` before the model's own
final norm and unembedding; the last block's output is the model's output and has none. So
the layer view's layer ``l`` (block ``l``'s output, 1-based) uses translator ``l`` for ``l <
L``. A lens whose sizes are not the model's is refused, saying which.
"""

from __future__ import annotations

import json
from pathlib import Path

CONFIG = "config.json"
WEIGHTS = ("params.safetensors", "params.pt")
LENS_TYPE = "linear_tuned_lens"


class TunedLensError(ValueError):
    """A tuned-lens folder that cannot be used with this model (the message says why)."""


def read_tuned_lens(folder, hidden: int, depth: int) -> dict[int, tuple]:
    """The translators of the tuned lens in ``folder`` for a model of ``depth`` blocks of
    width ``hidden``: 0-based block index ``l - 1`` -> ``(W, b)`` (float32 CPU tensors, b
    None without a bias) for each block ``l < depth``."""
    import torch

    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise TunedLensError(f"the tuned lens {folder} is not a folder (it holds {CONFIG} "
                             "and params.pt, as the tuned-lens package saves a lens)")
    try:
        cfg = json.loads((folder / CONFIG).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TunedLensError(f"the tuned lens {folder} has no {CONFIG}") from None
    except (OSError, ValueError) as exc:
        raise TunedLensError(f"{folder / CONFIG} cannot be read: {exc}") from None
    if not isinstance(cfg, dict):
        raise TunedLensError(f"{folder / CONFIG} is not a JSON object")
    if cfg.get("lens_type", LENS_TYPE) != LENS_TYPE:
        raise TunedLensError(f"{folder / CONFIG}: lens_type {cfg.get('lens_type')!r}; only "
                             f"{LENS_TYPE!r} (affine translators) is read")
    for key, want in (("d_model", hidden), ("num_hidden_layers", depth)):
        if cfg.get(key) != want:
            raise TunedLensError(
                f"{folder / CONFIG}: {key} is {cfg.get(key)!r}, the model's is {want} (the "
                f"lens was tuned for {cfg.get('base_model_name_or_path') or 'another model'})")
    state = _weights(folder)
    out: dict[int, tuple] = {}
    for layer in range(1, depth):
        w, b = state.get(f"{layer}.weight"), state.get(f"{layer}.bias")
        if not isinstance(w, torch.Tensor) or tuple(w.shape) != (hidden, hidden):
            raise TunedLensError(f"{folder}: translator {layer}'s weight is missing or not "
                                 f"{hidden} x {hidden}")
        if cfg.get("bias", True) and (not isinstance(b, torch.Tensor)
                                      or tuple(b.shape) != (hidden,)):
            raise TunedLensError(f"{folder}: translator {layer}'s bias is missing or not "
                                 f"of size {hidden}")
        if not bool(torch.isfinite(w).all()) or (b is not None and
                                                 not bool(torch.isfinite(b).all())):
            raise TunedLensError(f"{folder}: translator {layer} holds NaN or infinite values")
        out[layer - 1] = (w.float(), b.float() if b is not None else None)
    return out


def _weights(folder: Path) -> dict:
    import torch

    for name in WEIGHTS:
        path = folder / name
        if not path.exists():
            continue
        try:
            if name.endswith(".safetensors"):
                from safetensors.torch import load_file

                return load_file(str(path))
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - said with the file's name
            raise TunedLensError(f"{path} cannot be read as tensors: {exc}") from None
        if not isinstance(state, dict):
            raise TunedLensError(f"{path} holds no state dict of tensors")
        return state
    raise TunedLensError(f"the tuned lens {folder} has no {' or '.join(WEIGHTS)}")


def translators(folder, model) -> dict:
    """:func:`read_tuned_lens` for ``model`` (its blocks and width as the lens reads them):
    0-based block index -> ``translate(h)`` = ``h + W h + b`` in float32."""
    from sga_core.model.lens import lens_parts

    blocks, norm, head, _ = lens_parts(model)
    hidden = int(head.weight.shape[1])
    read = read_tuned_lens(folder, hidden, len(blocks))
    return {i: _translator(w, b) for i, (w, b) in read.items()}


def _translator(w, b):
    def translate(h):
        x = h.float()
        y = x + x @ w.to(x.device).T
        return y + b.to(x.device) if b is not None else y
    return translate
