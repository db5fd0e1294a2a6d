"""A model made of two models at inference: Who's Harry Potter (WHP).

A run folder's ``model/`` may hold, instead of weights, a *model spec* ``wrapper.json``::

    {"kind": "whp", "version": 1, "base": "/runs/demo-original/model",
     "reinforced": "../reinforced", "alpha": 1.0, "combine": "logits"}

(relative paths are relative to the ``model/`` folder), beside the tokenizer and the base
model's ``config.json`` (so every tool that asks "does this run have a model?" sees one).
:func:`sga_core.model.loading.load_model` loads such a folder as a :class:`CombinedLM`, so the
evaluation, the token tables, the probe job and the trainer's probes use it like any model.

``combine``:

- ``logits`` (default; Eldan & Russinovich 2023, "Who's Harry Potter?", eq. 1):
  ``v = v_base - alpha * relu(v_reinforced - v_base)`` on the logits;
- ``probs`` (the SGA paper's appendix A, eq. "WHP"):
  ``p = p_base - alpha * (p_reinforced - p_base)``, floored at 1e-10 and renormalised (the
  difference can be negative).

Generation is greedy with a KV cache for each model. torch is imported lazily; this module
does not import :mod:`sga_core.model.loading` (that one imports this), so loading passes its
loader in.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from functools import lru_cache
from pathlib import Path

from sga_core.fileio import atomic_dir

WRAPPER_FILE = "wrapper.json"
KINDS = ("whp",)
COMBINES = ("logits", "probs")
PROB_FLOOR = 1e-10


class WrapperError(ValueError):
    """A wrapper.json that cannot be read; the message names the file and the field."""


def is_wrapper(spec) -> bool:
    """Whether ``spec`` is a folder holding a model spec (``wrapper.json``)."""
    try:
        return bool(spec) and (Path(str(spec)).expanduser() / WRAPPER_FILE).is_file()
    except OSError:
        return False


def refuse_training(spec) -> None:
    if is_wrapper(spec):
        raise WrapperError(f"{spec} combines two models at inference (wrapper.json): it can "
                           "be evaluated and probed, not trained further; unlearn from a "
                           "model folder with weights")


def read_spec(folder) -> dict:
    """The checked spec of a wrapper folder, its model paths made absolute."""
    path = Path(folder).expanduser() / WRAPPER_FILE
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise WrapperError(f"{path}: cannot read the model spec: {exc}") from None
    if not isinstance(spec, dict):
        raise WrapperError(f"{path}: expected a JSON object")
    if spec.get("kind") not in KINDS:
        raise WrapperError(f"{path}: kind: {spec.get('kind')!r} is not one of {list(KINDS)}")
    for key in ("base", "reinforced"):
        if not isinstance(spec.get(key), str) or not spec[key].strip():
            raise WrapperError(f"{path}: {key}: expected a model folder or id")
    alpha = spec.get("alpha")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(
            alpha):
        raise WrapperError(f"{path}: alpha: expected a finite number, got {alpha!r}")
    if spec.get("combine", "logits") not in COMBINES:
        raise WrapperError(f"{path}: combine: {spec.get('combine')!r} is not one of "
                           f"{list(COMBINES)}")
    out = dict(spec, alpha=float(alpha), combine=spec.get("combine", "logits"))
    for key in ("base", "reinforced"):
        p = Path(spec[key]).expanduser()
        local = p if p.is_absolute() else path.parent / p
        if p.is_absolute() or spec[key].startswith(".") or local.exists():
            out[key] = os.path.normpath(local)
    return out


def save_wrapper(target, spec: dict, tokenizer, base_dir) -> Path:
    """Write a wrapper model folder at ``target`` (atomically: built beside it, then
    renamed): ``wrapper.json``, the tokenizer, and the base model's config files."""
    with atomic_dir(target) as tmp:
        tokenizer.save_pretrained(tmp)
        for name in ("config.json", "generation_config.json"):
            src = Path(base_dir) / name
            if src.exists():
                shutil.copyfile(src, tmp / name)
        (tmp / WRAPPER_FILE).write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    return Path(target)


def combine(base_logits, reinforced_logits, alpha: float, mode: str = "logits"):
    """The combined next-token logits (log-probabilities for ``probs``), in float32."""
    import torch

    v, r = base_logits.float(), reinforced_logits.float()
    if mode == "logits":
        return v - alpha * torch.relu(r - v)
    if mode == "probs":
        p = (1 + alpha) * torch.softmax(v, -1) - alpha * torch.softmax(r, -1)
        p = p.clamp(min=PROB_FLOOR)
        return torch.log(p / p.sum(-1, keepdim=True))
    raise WrapperError(f"combine: {mode!r} is not one of {list(COMBINES)}")


def load_wrapper(folder, dtype: str, load):
    """A :class:`CombinedLM` for a wrapper folder; ``load(spec, dtype)`` loads each model."""
    spec = read_spec(folder)
    return combined_class()(load(spec["base"], dtype=dtype),
                            load(spec["reinforced"], dtype=dtype), spec["alpha"],
                            spec["combine"])


@lru_cache(maxsize=1)
def combined_class():
    """The :class:`CombinedLM` class (built on first use, so importing this module stays
    free of torch)."""
    import torch
    from transformers.modeling_outputs import CausalLMOutput

    class CombinedLM(torch.nn.Module):
        """Two causal LMs whose next-token distributions are combined (WHP). Exposes what
        the workbench uses of a model: ``forward(...).logits``, greedy ``generate``,
        ``config`` and ``generation_config`` (the base model's)."""

        def __init__(self, base, reinforced, alpha: float, mode: str = "logits"):
            super().__init__()
            self.base, self.reinforced = base, reinforced
            self.alpha, self.mode = float(alpha), mode
            self.requires_grad_(False)

        @property
        def config(self):
            return self.base.config

        @property
        def generation_config(self):
            return self.base.generation_config

        @property
        def device(self):
            return next(self.base.parameters()).device

        def forward(self, input_ids, attention_mask=None, **kwargs):
            kwargs.pop("use_cache", None)
            logits = [m(input_ids=input_ids, attention_mask=attention_mask, use_cache=False,
                        **kwargs).logits for m in (self.base, self.reinforced)]
            return CausalLMOutput(logits=combine(*logits, self.alpha, self.mode))

        @torch.no_grad()
        def generate(self, input_ids, attention_mask=None, generation_config=None, **_):
            """Greedy decoding (the only kind the workbench uses), one KV cache per model,
            positions from the attention mask (left padding), as transformers does."""
            cfg = generation_config or self.generation_config
            if getattr(cfg, "do_sample", False) or (getattr(cfg, "num_beams", 1) or 1) > 1:
                raise WrapperError("a WHP model generates greedily only")
            if attention_mask is None:
                attention_mask = torch.ones_like(input_ids)
            eos = cfg.eos_token_id
            eos = torch.tensor(eos if isinstance(eos, (list, tuple)) else
                               [] if eos is None else [eos], device=input_ids.device)
            pad = cfg.pad_token_id if cfg.pad_token_id is not None else (
                int(eos[0]) if len(eos) else 0)
            out, mask, step = input_ids, attention_mask, input_ids
            caches = [None, None]
            done = torch.zeros(len(input_ids), dtype=torch.bool, device=input_ids.device)
            for _ in range(int(cfg.max_new_tokens or 0)):
                pos = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 1)
                pos = pos[:, -step.shape[1]:]
                logits = []
                for j, m in enumerate((self.base, self.reinforced)):
                    o = m(input_ids=step, attention_mask=mask, position_ids=pos,
                          past_key_values=caches[j], use_cache=True)
                    caches[j] = o.past_key_values
                    logits.append(o.logits[:, -1])
                nxt = combine(*logits, self.alpha, self.mode).argmax(-1)
                nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
                out = torch.cat([out, nxt[:, None]], 1)
                done |= torch.isin(nxt, eos)
                if bool(done.all()):
                    break
                step = nxt[:, None]
                mask = torch.cat([mask, mask.new_ones(len(mask), 1)], 1)
            return out

    return CombinedLM
