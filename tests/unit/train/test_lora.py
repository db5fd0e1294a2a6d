"""LoRA for every method, on the tiny model: adapters are what trains; with r = 0
SGA-LoRA is GA-LoRA; the disabled-adapter reference is the frozen starting model; a saved
adapter (and the merged model) reloads to the same logits; gradient checkpointing changes
nothing but memory; a LoRA run trains, evaluates in its own process and saves its adapter."""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch

from sga_core.config import TrainConfig
from sga_core.model.encoding import Encoder
from sga_core.model.forward import forward_stats
from sga_core.model.loading import is_model_folder, load_model, load_tokenizer
from sga_core.model.lora import adapters_off, apply_lora, enable_checkpointing, save_adapter
from sga_core.runs.create import create_run
from sga_core.runs.folder import metrics
from sga_core.train.reference import Reference
from sga_core.train.trainer import run_training

LORA = {"lora_rank": 4, "lora_alpha": 8.0}


def lora_model(tiny_model_dir, seed=0, **extra):
    torch.manual_seed(seed)
    model = load_model(str(tiny_model_dir))
    args = TrainConfig().training
    for k, v in {**LORA, **extra}.items():
        setattr(args, k, v)
    return model, apply_lora(model, args)


def randomize_adapters(model, scale=0.3):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(scale * torch.randn_like(p))


@pytest.fixture(scope="module")
def batch(tiny_model_dir, demo_dir):
    from sga_core.data import load_qa

    enc = Encoder(load_tokenizer(str(tiny_model_dir)), max_length=64)
    rows = load_qa(demo_dir / "forget.jsonl")[:4]
    seqs = [enc.qa(r["question"], r["answer"], role="forget") for r in rows]
    return enc, seqs, list(range(len(seqs)))


def test_only_adapters_train(tiny_model_dir):
    _, model = lora_model(tiny_model_dir)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert not any("lm_head" in n or "embed" in n for n in trainable)


def test_disabled_adapter_reference_equals_frozen_copy(tiny_model_dir, batch):
    enc, seqs, ids = batch
    torch.manual_seed(0)
    frozen = load_model(str(tiny_model_dir)).eval()
    _, model = lora_model(tiny_model_dir)
    model.train()
    randomize_adapters(model)
    ref = Reference(model, adapters=True).stats(seqs, ids, enc.pad_id, "cpu", keep_logits=True)
    copy_ref = Reference(frozen).stats(seqs, ids, enc.pad_id, "cpu", keep_logits=True)
    assert torch.equal(ref.n_tokens, copy_ref.n_tokens)
    assert torch.allclose(ref.mean_nll, copy_ref.mean_nll, atol=1e-6)
    assert torch.allclose(ref.token_logits, copy_ref.token_logits, atol=1e-5)
    assert model.training  # the trained model is back in training mode, adapters on
    live = forward_stats(model, seqs, ids, enc.pad_id, "cpu")
    assert (live.mean_nll - copy_ref.mean_nll).abs().max() > 1e-3  # the adapters do act
    with adapters_off(model):
        assert not model.training


def test_saved_adapter_and_merged_model_reload_to_same_logits(tiny_model_dir, batch,
                                                              tmp_path):
    from sga_core.model.loading import merge_adapter

    enc, seqs, ids = batch
    _, model = lora_model(tiny_model_dir)
    randomize_adapters(model)
    model.eval()
    folder = tmp_path / "model"
    save_adapter(model, folder, str(tiny_model_dir), str(tiny_model_dir))
    load_tokenizer(str(tiny_model_dir)).save_pretrained(folder)
    assert is_model_folder(folder) and not (folder / "config.json").exists()
    assert json.loads((folder / "sga_base.json").read_text())["spec"] == str(tiny_model_dir)
    ids_t = torch.tensor([seqs[0].input_ids])
    with torch.no_grad():
        want = model(input_ids=ids_t).logits
        got = load_model(str(folder)).eval()(input_ids=ids_t).logits
        unmerged = load_model(str(folder), merge=False).eval()(input_ids=ids_t).logits
    assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
    assert torch.allclose(unmerged, want, atol=1e-6)
    merged_dir = merge_adapter(folder, tmp_path / "model-merged")
    assert (merged_dir / "config.json").exists()
    with torch.no_grad():
        merged = load_model(str(merged_dir)).eval()(input_ids=ids_t).logits
    assert torch.allclose(merged, want, atol=1e-5)


def test_gradient_checkpointing_with_lora_changes_nothing_but_memory(tiny_model_dir, batch):
    enc, seqs, ids = batch
    grads = []
    for checkpointing in (False, True):
        torch.manual_seed(0)
        base = load_model(str(tiny_model_dir))
        if checkpointing:
            enable_checkpointing(base)
        args = TrainConfig().training
        for k, v in LORA.items():
            setattr(args, k, v)
        model = apply_lora(base, args)
        randomize_adapters(model)
        model.train()
        if checkpointing:
            emb = model.get_input_embeddings()(torch.tensor([[1, 2]]))
            assert emb.requires_grad  # inputs require grads: frozen embeddings pass them on
        stats = forward_stats(model, seqs, ids, enc.pad_id, "cpu")
        (-stats.mean_nll.sum()).backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()
                      if p.requires_grad})
    assert grads[0].keys() == grads[1].keys()
    for n in grads[0]:
        assert torch.allclose(grads[0][n], grads[1][n], atol=1e-6), n


def lora_run(tmp_path, tiny_model_dir, demo_dir, method, method_args, run_id, normals=None,
             **extra):
    data = {"forget": str(demo_dir / "forget.jsonl"), "retain": str(demo_dir / "retain.jsonl")}
    if normals:
        data["normals"] = str(normals)
    cfg = TrainConfig.from_dict({
        "run_id": run_id, "model": str(tiny_model_dir), "method": method,
        "method_args": method_args, "data": data,
        "training": {"batch_size": 4, "max_steps": 2, "lr": 1e-2, "seed": 0,
                     "probe_count": 0, "eval_nll": False, **LORA, **extra},
        "launch": {"device": "cpu"}, "eval": {"enabled": False}})
    run_dir = create_run(cfg, tmp_path / "runs")
    assert run_training(TrainConfig.from_dict(cfg.to_dict(), base_dir=run_dir),
                        run_dir) == "completed"
    return run_dir


def adapter_weights(run_dir):
    from safetensors.torch import load_file

    return load_file(run_dir / "model" / "adapter_model.safetensors")


@pytest.mark.slow
def test_sga_lora_at_r0_equals_ga_lora(tmp_path, tiny_model_dir, demo_dir, idk_normals_file):
    # no length grouping: SGA units are longer (their normals), which would change the order
    sga = lora_run(tmp_path, tiny_model_dir, demo_dir, "sga", {"r": 0.0, "k": 4}, "sga-r0",
                   normals=idk_normals_file, group_by_length=False)
    ga = lora_run(tmp_path, tiny_model_dir, demo_dir, "ga", {}, "ga", group_by_length=False)
    a, b = adapter_weights(sga), adapter_weights(ga)
    assert a.keys() == b.keys() and any("lora_B" in k for k in a)
    assert any(a[k].abs().max() > 0 for k in a if "lora_B" in k)  # the adapters trained
    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-6), k
    for x, y in zip(metrics(sga), metrics(ga)):
        assert x["loss"] == pytest.approx(y["loss"], rel=1e-5)
        assert x["forget_nll"] == pytest.approx(y["forget_nll"], rel=1e-5)


@pytest.mark.slow
def test_npo_lora_run_uses_the_base_model_as_reference(tmp_path, tiny_model_dir, demo_dir):
    beta = 0.5
    run_dir = lora_run(tmp_path, tiny_model_dir, demo_dir, "npo", {"beta": beta}, "npo")
    first = metrics(run_dir)[0]
    # step 1 runs on the starting model: log p = log p_ref, so each unit's loss is 2/b log 2
    assert first["loss"] == pytest.approx(2 / beta * math.log(2), rel=1e-5)
    assert metrics(run_dir)[1]["loss"] != pytest.approx(first["loss"], rel=1e-6)
    env = json.loads((run_dir / "env.json").read_text())
    assert env["lora_rank"] == LORA["lora_rank"]


@pytest.mark.slow
def test_lora_run_evaluates_in_process_and_saves_merged(tmp_path, tiny_model_dir, demo_dir,
                                                         monkeypatch):
    from sga_core.evaluation import run as eval_run
    from sga_core.runs.status import read_eval

    loads = []
    real = eval_run.load_model_and_tokenizer
    monkeypatch.setattr(eval_run, "load_model_and_tokenizer",
                        lambda *a, **k: loads.append(a) or real(*a, **k))
    data = {"forget": str(demo_dir / "forget.jsonl"), "retain": str(demo_dir / "retain.jsonl")}
    cfg = TrainConfig.from_dict({
        "run_id": "kl-lora", "model": str(tiny_model_dir), "method": "kl", "data": data,
        "training": {"batch_size": 4, "max_steps": 1, "seed": 0, "probe_count": 0,
                     "eval_nll": False, "save_merged": True, **LORA},
        "launch": {"device": "cpu"},
        "eval": {"enabled": True, "max_new_tokens": 4, "max_retain_rows": 4}})
    run_dir = create_run(cfg, tmp_path / "runs")
    assert run_training(TrainConfig.from_dict(cfg.to_dict(), base_dir=run_dir),
                        run_dir) == "completed"
    assert (run_dir / "model" / "adapter_config.json").exists()
    assert (run_dir / "model-merged" / "config.json").exists()
    st = read_eval(run_dir)
    assert st["state"] == "completed", st
    assert st["pid"] == __import__("os").getpid()  # evaluated in the training process
    summary = json.loads((run_dir / "eval" / "summary.json").read_text())
    assert summary["in_process"] is True
    assert loads == []  # the trained model was evaluated as it was in memory
    from sga_core.runs.launch import should_evaluate

    assert not should_evaluate(run_dir)  # the runner will not evaluate it a second time
    # the adapter folder evaluates like any model folder (base + adapter, merged on load)
    again = eval_run.evaluate_run(run_dir, out_dir=tmp_path / "again")
    for name in ("forget_probability", "retain_probability"):
        assert again["metrics"][name]["value"] == pytest.approx(
            summary["metrics"][name]["value"], rel=1e-4)


def test_reference_copy_is_prepared_frozen():
    from accelerate import Accelerator

    from sga_core.train.reference import prepare_reference

    model = torch.nn.Linear(3, 2)
    ref = prepare_reference(Accelerator(cpu=True), copy.deepcopy(model))
    assert not any(p.requires_grad for p in ref.parameters()) and not ref.training


def test_long_text_sequences_with_checkpointing(tiny_model_dir, demo_dir):
    """Text tasks up to 2048 tokens: the encoder keeps 2048, and a checkpointed forward and
    backward over them gives the gradients of the plain one."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from sga_core.data import load_dataset

    tok = load_tokenizer(str(tiny_model_dir))
    enc = Encoder(tok, max_length=2048)
    rows = load_dataset(demo_dir / "text_forget.jsonl", kind="text").rows
    long_text = " ".join(r["continuation"] for r in rows) * 8
    seq = enc.text(rows[0]["prompt"], long_text, role="forget")
    assert len(seq) == 2048 and seq.n_scored > 1900
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32,
                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=4096, tie_word_embeddings=True)
    grads = []
    for checkpointing in (False, True):
        torch.manual_seed(0)
        model = LlamaForCausalLM(cfg)
        if checkpointing:
            enable_checkpointing(model)
        model.train()
        stats = forward_stats(model, [seq], [0], enc.pad_id, "cpu")
        stats.mean_nll.sum().backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for a, b in zip(*grads):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-7)


def test_reference_copy_is_sharded_like_the_trained_model(monkeypatch):
    """Under DeepSpeed the reference copy gets its own inference engine from the run's
    DeepSpeed config (ZeRO-3 keeps sharding, no optimizer); under FSDP accelerate wraps it;
    the GPU paths, checked here with stand-ins for DeepSpeed and the accelerator."""
    import sys
    import types

    from sga_core.train.reference import deepspeed_inference_config, prepare_reference

    ds_cfg = {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}},
              "optimizer": {"type": "AdamW"}, "scheduler": {"type": "WarmupLR"},
              "bf16": {"enabled": True}}
    frozen = deepspeed_inference_config(ds_cfg)
    assert frozen["zero_optimization"] == {"stage": 3} and "optimizer" not in frozen
    assert "scheduler" not in frozen and frozen["bf16"] == {"enabled": True}
    assert ds_cfg["optimizer"]  # the trained model's config is untouched
    assert deepspeed_inference_config({"zero_optimization": {"stage": 2}})[
        "zero_optimization"]["stage"] == 0

    calls = []

    class Engine(torch.nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module = module

    fake = types.ModuleType("deepspeed")
    fake.initialize = lambda model, config: calls.append(config) or (Engine(model), None)
    monkeypatch.setitem(sys.modules, "deepspeed", fake)
    kind = types.SimpleNamespace
    acc = kind(distributed_type=kind(value="DEEPSPEED"),
               state=kind(deepspeed_plugin=kind(deepspeed_config=ds_cfg)))
    engine = prepare_reference(acc, torch.nn.Linear(2, 2))
    assert isinstance(engine, Engine) and not engine.training
    assert calls == [frozen]
    prepared = []
    acc = kind(distributed_type=kind(value="FSDP"),
               prepare=lambda m: prepared.append(m) or m)
    model = torch.nn.Linear(2, 2)
    assert prepare_reference(acc, model) is model and prepared == [model]
    assert not any(p.requires_grad for p in model.parameters())
