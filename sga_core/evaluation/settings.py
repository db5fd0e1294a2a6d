"""How one evaluation runs: :class:`EvalSettings` (the protocol, the limits, the model's
dtype and device), resolved against its protocol (:mod:`sga_core.protocols`), and a run's
settings from its config (:func:`settings_from_config`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sga_core.protocols import (
    PROMPT_FORMATS,
    WIKITEXT_TASK,
    Protocol,
    check_prompt_format,
    get_protocol,
)


@dataclass
class EvalSettings:
    """How one evaluation runs. ``protocol`` names the preset
    (:mod:`~sga_core.protocols`); ``max_new_tokens`` / ``max_retain_rows`` left
    None take the protocol's, and the protocol's text limit (``max_length``) replaces this
    one when it has its own. ``lm_eval_tasks`` are extra lm-eval utility tasks."""

    max_new_tokens: int | None = None
    max_retain_rows: int | None = None
    max_rows: int = 0  # QA and text: at most this many rows of every set (0 = all)
    batch_size: int = 16
    max_length: int = 256
    system_prompt: str | None = None
    dtype: str = "float32"
    device: str = "auto"
    protocol: str = "demo"
    prompt_format: str | None = None  # a PROMPT_FORMATS key; None = the protocol's
    lm_eval_tasks: tuple[str, ...] = ()
    lm_eval_limit: float | None = None
    lm_eval_include: str | None = None
    retrained_auc: float | None = None
    layer_view: bool = True  # write eval/layers.jsonl (the logit lens of the forget answers)
    tuned_lens: str | None = None  # a tuned-lens folder read instead of the logit lens
    mia_gradnorm: bool = False  # the GradNorm attack (a backward pass per row)

    def resolve(self) -> tuple[Protocol, EvalSettings, dict]:
        """``(protocol, these settings with the protocol's values filled in, metric
        options)``; the options are the protocol's settings plus the run's extras."""
        from dataclasses import replace

        proto = get_protocol(self.protocol)
        fmt = check_prompt_format(self.prompt_format) or proto.prompt_format
        st = replace(self, protocol=proto.name, prompt_format=fmt,
                     max_new_tokens=proto.qa_new_tokens if self.max_new_tokens is None
                     else int(self.max_new_tokens),
                     max_retain_rows=proto.max_retain_rows if self.max_retain_rows is None
                     else int(self.max_retain_rows),
                     max_length=proto.max_length or self.max_length)
        options = {**proto.settings(), "prompt_format": fmt,
                   "zero_shot_tasks": [t for t in proto.lm_eval_tasks if t != WIKITEXT_TASK],
                   "extra_lm_tasks": list(self.lm_eval_tasks or ()),
                   "lm_eval_limit": self.lm_eval_limit, "lm_eval_include": self.lm_eval_include,
                   "retrained_auc": self.retrained_auc, "mia_gradnorm": bool(self.mia_gradnorm)}
        return proto, st, options

    def encoder(self, tok, model=None):
        """The Encoder of these (resolved) settings: the prompt format's tags, the text limit
        capped at the model's positions."""
        from sga_core.model.encoding import Encoder

        limit = self.max_length
        positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            limit = min(limit, positions)
        return Encoder(tok, max_length=limit, system_prompt=self.system_prompt,
                       tags=PROMPT_FORMATS.get(self.prompt_format or "chat"))


def settings_from_config(cfg, overrides: Mapping[str, Any] | None = None) -> EvalSettings:
    """A run's evaluation settings: its ``eval`` section (the protocol; ``max_new_tokens``
    and ``max_retain_rows`` are the demo protocol's), overridden by ``overrides``."""
    ov = dict(overrides or {})
    ev = cfg.eval
    protocol = ov.get("protocol") or ev.protocol
    demo = get_protocol(protocol).name == "demo"
    new = ov.get("max_new_tokens") or (ev.max_new_tokens if demo else None)
    rows = ov["max_retain_rows"] if ov.get("max_retain_rows") is not None else (
        ev.max_retain_rows if demo else None)
    return EvalSettings(
        max_new_tokens=None if new is None else int(new),
        max_retain_rows=None if rows is None else int(rows),
        max_rows=int(ov["max_rows"] if ov.get("max_rows") is not None
                     else getattr(ev, "max_rows", 0) or 0),
        batch_size=int(ov.get("batch_size") or ev.batch_size),
        max_length=cfg.training.max_length,
        system_prompt=cfg.training.system_prompt,
        dtype=cfg.training.dtype,
        device=ov.get("device") or ("cpu" if cfg.launch.device == "cpu" else "auto"),
        protocol=protocol,
        prompt_format=ov.get("prompt_format") or ev.prompt_format,
        lm_eval_tasks=tuple(ov.get("lm_eval_tasks") or ev.lm_eval_tasks or ()),
        lm_eval_limit=ov.get("lm_eval_limit") if ov.get("lm_eval_limit") is not None
        else ev.lm_eval_limit,
        lm_eval_include=ov.get("lm_eval_include") or ev.lm_eval_include,
        retrained_auc=ov.get("retrained_auc") if ov.get("retrained_auc") is not None
        else ev.retrained_auc,
        layer_view=bool(ov["layer_view"] if ov.get("layer_view") is not None
                        else getattr(ev, "layer_view", True)),
        mia_gradnorm=bool(ov["mia_gradnorm"] if ov.get("mia_gradnorm") is not None
                          else getattr(ev, "mia_gradnorm", False)),
        tuned_lens=ov.get("tuned_lens") or getattr(ev, "tuned_lens", None),
    )
