"""Worker for tests/e2e/test_grad_norm.py: the trainer's gradient-norm step run outside pytest.

``fsdp MODEL_DIR OUT_JSON`` (under ``torch.distributed.run --nproc_per_node 2``, gloo on the
CPU): the tiny model wrapped in torch's FSDP (version 1) exactly as
configs/accelerate/fsdp_8gpu.yaml asks (FULL_SHARD, transformer-block wrap units,
use_orig_params), a data-parallel backward of one global batch split over the two ranks, then
``Trainer.apply_update`` with ``max_grad_norm: 0``. accelerate 1.15 only ever picks FSDP for
accelerator devices (its state's MULTI_GPU branch; ``Accelerator(cpu=True)`` is MULTI_CPU), so
the worker records on the accelerator state what accelerate records there on a GPU node
(``distributed_type = FSDP``, the plugin, the prepared model) and everything after that is
accelerate's and torch's own code. Rank 0 writes the returned norm, the same batch's norm on
one unsharded copy of the model, and what a second update with no gradient at all returned.

``nograd MODEL_DIR FORGET OUT_JSON`` (one plain process): a real ``Trainer.setup()`` of a GA
run, every ``.grad`` set to None (as under DeepSpeed ZeRO, where the engine keeps the
gradients), then ``apply_update``; writes what it returned or the exception it raised.
"""

from __future__ import annotations

import functools
import json
import sys
import tempfile
from pathlib import Path


def _cfg(model: str, forget: str):
    from sga_core.config import TrainConfig

    return TrainConfig.from_dict({
        "run_id": "grad-norm", "model": model, "method": "ga", "method_args": {},
        "data": {"forget": forget},
        "training": {"batch_size": 4, "max_steps": 1, "lr": 1e-3, "seed": 0,
                     "max_grad_norm": 0.0, "probe_every": 0, "eval_nll": False},
        "launch": {"device": "cpu"}, "eval": {"enabled": False}})


def _outcome(fn) -> dict:
    try:
        value = fn()
    except Exception as exc:  # the test reports what was raised, never a traceback
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"value": None if value is None else float(value)}


def fsdp(model_dir: str, out: str) -> None:
    import torch
    from accelerate import Accelerator
    from accelerate.utils import DistributedType, FullyShardedDataParallelPlugin
    from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy
    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
    from transformers import AutoModelForCausalLM

    from sga_core.train.schedule import make_scheduler
    from sga_core.train.trainer import Trainer

    acc = Accelerator(cpu=True)  # MULTI_CPU: gloo process group over the two ranks
    assert acc.num_processes == 2, acc.num_processes
    torch.manual_seed(0)
    plain = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    ids = torch.randint(0, plain.config.vocab_size, (4, 16), generator=torch.Generator()
                        .manual_seed(1))
    # the single-process norm: the whole batch through one unsharded copy
    plain(input_ids=ids, labels=ids).loss.backward()
    full = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in plain.parameters()
                                                 if p.grad is not None])).item()

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    block = type(model.model.layers[0])
    model = FullyShardedDataParallel(
        model, sharding_strategy=ShardingStrategy.FULL_SHARD, use_orig_params=True,
        auto_wrap_policy=functools.partial(transformer_auto_wrap_policy,
                                           transformer_layer_cls={block}),
        device_id=torch.device("cpu"))
    acc.state.distributed_type = DistributedType.FSDP
    acc.state.fsdp_plugin = FullyShardedDataParallelPlugin(fsdp_version=1,
                                                           sync_module_states=False)
    acc._models.append(model)

    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    trainer = Trainer.__new__(Trainer)
    trainer.cfg, trainer.acc, trainer.model, trainer.opt = (
        _cfg(model_dir, "unused"), acc, model, opt)
    trainer.sched = make_scheduler(opt, "constant", 0, 1)
    # equal halves of the batch (same token count): FSDP's gradient averaging gives the
    # gradient of the whole batch's mean loss
    half = ids[2 * acc.process_index:2 * acc.process_index + 2]
    model(input_ids=half, labels=half).loss.backward()
    local = [p for p in model.parameters() if p.grad is not None]
    result = {"full": full, "update": _outcome(lambda: trainer.apply_update(0.0)),
              "local_params_with_grad": len(local)}
    opt.zero_grad(set_to_none=True)
    result["no_grad_update"] = _outcome(lambda: trainer.apply_update(0.0))
    if acc.is_main_process:
        Path(out).write_text(json.dumps(result), encoding="utf-8")
    acc.wait_for_everyone()
    acc.end_training()


def nograd(model_dir: str, forget: str, out: str) -> None:
    from sga_core.train.trainer import Trainer

    with tempfile.TemporaryDirectory() as run_dir:
        trainer = Trainer(_cfg(model_dir, forget), run_dir)
        trainer.setup()
        trainer.opt.zero_grad(set_to_none=True)
        assert all(p.grad is None for p in trainer.model.parameters())
        result = {"update": _outcome(lambda: trainer.apply_update(0.0))}
        Path(out).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    {"fsdp": fsdp, "nograd": nograd}[mode](*args)
