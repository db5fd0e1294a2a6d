"""The frozen reference model of KL, NPO and DPO-style methods: the starting model's
per-sequence statistics on the same batch, without gradients.

- With LoRA the reference is the trained model itself with its adapters disabled
  (:func:`sga_core.model.lora.adapters_off`): no second copy of the weights.
- Otherwise a second copy is loaded and prepared by accelerate like the trained model:
  sharded under DeepSpeed ZeRO-3 (its own inference engine, as trl does) and under FSDP,
  placed on the device with the run's mixed-precision autocast otherwise.

Methods read ``stats.ref`` (a :class:`~sga_core.model.forward.SeqStats`); the trainer fills
it through :meth:`Reference.stats`.
"""

from __future__ import annotations

import contextlib
import copy


class Reference:
    """``stats(seqs, unit_ids, pad_id, device, keep_logits)`` of the starting model."""

    def __init__(self, model, adapters: bool = False):
        self.model = model
        self.adapters = adapters  # True: the trained model with its adapters disabled

    def context(self):
        if self.adapters:
            from sga_core.model.lora import adapters_off

            return adapters_off(self.model)
        return contextlib.nullcontext()

    def stats(self, seqs, unit_ids, pad_id: int, device, keep_logits=False):
        import torch

        from sga_core.model.forward import forward_stats

        with torch.no_grad(), self.context():
            return forward_stats(self.model, seqs, unit_ids, pad_id, device,
                                 keep_logits=keep_logits)


def deepspeed_inference_config(ds_config: dict) -> dict:
    """The trained model's DeepSpeed config made into a frozen model's (as trl does): no
    optimizer or scheduler; ZeRO-3 keeps sharding the weights, other stages use none."""
    cfg = copy.deepcopy(ds_config)
    for key in ("optimizer", "scheduler"):
        cfg.pop(key, None)
    zero = cfg.setdefault("zero_optimization", {})
    if zero.get("stage") != 3:
        zero["stage"] = 0
    for key in ("offload_optimizer",):
        zero.pop(key, None)
    cfg.setdefault("train_micro_batch_size_per_gpu", 1)
    return cfg


def prepare_reference(acc, model):
    """Place a frozen copy as accelerate places the trained model (see the module doc)."""
    model.requires_grad_(False)
    model.eval()
    kind = acc.distributed_type.value if hasattr(acc.distributed_type, "value") \
        else str(acc.distributed_type)
    if kind == "DEEPSPEED":
        import deepspeed

        cfg = deepspeed_inference_config(acc.state.deepspeed_plugin.deepspeed_config)
        engine = deepspeed.initialize(model=model, config=cfg)[0]
        engine.eval()
        return engine
    if kind == "FSDP":
        return acc.prepare(model)  # sharded like the trained model; frozen, so no optimizer
    return acc.prepare_model(model, evaluation_mode=True)


def for_method(method_cls, acc, model, cfg) -> Reference | None:
    """The reference of a run whose method ``needs`` one: the trained (prepared) ``model``
    with its adapters off under LoRA, else a frozen copy of ``cfg.model`` placed by
    accelerate; None for other methods."""
    if "reference" not in method_cls.needs:
        return None
    if cfg.training.lora_rank:
        return Reference(model, adapters=True)
    from sga_core.model.loading import load_model

    return Reference(prepare_reference(acc, load_model(cfg.model, dtype=cfg.training.dtype)))
