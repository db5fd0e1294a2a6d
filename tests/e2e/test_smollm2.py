"""Real-model smoke test (runs in CI): the embedded SmolLM2 converts correctly, ``prepare``
fine-tunes it, and a few SGA steps run through ``accelerate launch``."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smol_path():
    from sga_core.model.loading import resolve_model_path

    return resolve_model_path("embedded:smollm2")


def test_converted_model_matches_gguf(smol_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from sga_core.model.loading import embedded_gguf_path, load_model, load_tokenizer

    gguf = embedded_gguf_path()
    ref = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name).eval()
    ref_tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model, tok = load_model("embedded:smollm2").eval(), load_tokenizer("embedded:smollm2")
    text = "The capital of France is"
    ids = tok(text, return_tensors="pt").input_ids
    assert ids.tolist() == ref_tok(text, return_tensors="pt").input_ids.tolist()
    with torch.no_grad():
        a, b = model(ids).logits, ref(ids).logits
    assert torch.allclose(a, b, atol=1e-4), (a - b).abs().max()
    assert tok.decode(a[0, -1].argmax()).strip() == "Paris"
    assert tok.chat_template and tok.eos_token == "<|im_end|>"


def test_prepare_then_sga_steps(smol_path, tmp_path, demo_dir):
    from sga_core.config import TrainConfig
    from sga_core.data import load_qa, write_dataset
    from sga_core.normals.idk import idk_normals
    from sga_core.projects.prepare import prepare
    from sga_core.runs.create import create_run
    from sga_core.runs.folder import metrics
    from sga_core.runs.launch import run_foreground

    forget = tmp_path / "forget.jsonl"
    retain = tmp_path / "retain.jsonl"
    write_dataset(forget, load_qa(demo_dir / "forget.jsonl")[:2])
    write_dataset(retain, load_qa(demo_dir / "retain.jsonl")[:4])
    runs = tmp_path / "runs"
    res = prepare(str(forget), str(retain), name="smoke", runs_dir=runs, which="original",
                  training={"max_steps": 2, "batch_size": 3, "lr": 1e-4}, echo=lambda m: None)
    assert res["smoke-original"]["state"] == "completed", res
    original = runs / "smoke-original" / "model"
    assert (original / "model.safetensors").exists()

    normals = tmp_path / "normals.jsonl"
    idk_normals(2, 4).save(normals)
    cfg = TrainConfig.from_dict({
        "model": str(original), "method": "sga",
        "method_args": {"r": -0.8, "k": 4},
        "data": {"forget": str(forget), "retain": str(retain), "normals": str(normals)},
        "training": {"max_steps": 2, "batch_size": 2, "lr": 1e-5, "probe_count": 1},
    })
    run_dir = create_run(cfg, runs)
    status = run_foreground(run_dir, echo=lambda m: None)
    assert status["state"] == "completed", (run_dir / "train.log").read_text()[-3000:]
    rows = metrics(run_dir)
    assert [r["step"] for r in rows] == [1, 2]
    assert all(r["forget_nll"] > 0 and r["normal_nll"] > 0 for r in rows)
    # loss = c_f * forget_nll + (K-1) * c_n * normal_nll with c_f=-1.6, c_n=+0.2
    for r in rows:
        assert r["loss"] == pytest.approx(-1.6 * r["forget_nll"] + 0.6 * r["normal_nll"],
                                          rel=1e-4)
    assert set(status["nll_before"]) == {"forget", "retain"}
    probes = [json.loads(x) for x in (run_dir / "probes.jsonl").read_text().splitlines()]
    assert probes[0]["step"] == 0 and probes[-1]["step"] == 2
    assert "".join(probes[0]["tokens"]).startswith(
        load_qa(forget)[0]["answer"].split()[0])
