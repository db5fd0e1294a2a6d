"""Adaptive r: the combined gradient equals the SGA gradient at the chosen r, and a run
logs r moving step by step."""

from __future__ import annotations

import pytest

from sga_core.methods import get_method
from sga_core.methods.sga.adaptive import adaptive_gradient, clip_r


def test_clip_r():
    assert clip_r(3.0, -5, 2, 0.0) == 1.0  # never above 1
    assert clip_r(-7.0, -5, 1, 0.0) == -5
    assert clip_r(None, -5, 1, -0.8) == -0.8


@pytest.mark.parametrize("convention", ["label", "objective"])
def test_combined_gradient_equals_sga_gradient_at_that_r(tiny_model_dir, demo_dir,
                                                         idk_normals_file, convention):
    from sga_core.data import NormalTable, load_qa
    from sga_core.methods import MethodData
    from sga_core.methods.base import flatten
    from sga_core.model.encoding import Encoder
    from sga_core.model.forward import forward_stats
    from sga_core.model.loading import load_model, load_tokenizer

    model = load_model(str(tiny_model_dir)).double()
    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    data = MethodData("qa", load_qa(demo_dir / "forget.jsonl")[:3],
                      normals=NormalTable.load(idk_normals_file))
    cls = get_method("sga")
    units = cls(cls.Config(r=0.0, k=4, convention=convention)).build_units(data, enc)
    info = adaptive_gradient(model, units, k=4, convention=convention, bounds=(-100.0, 1.0),
                             fallback_r=0.0, pad_id=enc.pad_id, device="cpu",
                             scale=1 / len(units))
    combined = [p.grad.clone() for p in model.parameters()]
    assert info["r"] == clip_r(info["r_star"], -100.0, 1.0, 0.0)

    sga = cls(cls.Config(r=info["r"], k=4, convention=convention))
    model.zero_grad(set_to_none=True)
    seqs, ids = flatten(units)
    stats = forward_stats(model, seqs, ids, enc.pad_id, "cpu")
    sga.unit_losses(stats, len(units)).mean().backward()
    direct = [p.grad for p in model.parameters()]
    num = sum(float(((a - b) ** 2).sum()) for a, b in zip(combined, direct)) ** 0.5
    den = sum(float((b ** 2).sum()) for b in direct) ** 0.5
    assert den > 0 and num / den < 1e-6  # float rounding of differently padded batches


@pytest.mark.slow
def test_adaptive_run_logs_r(tiny_model_dir, demo_dir, idk_normals_file, tmp_path):
    from sga_core.config import TrainConfig
    from sga_core.runs.create import create_run
    from sga_core.runs.folder import metrics
    from sga_core.runs.launch import run_foreground

    cfg = TrainConfig.from_dict({
        "model": str(tiny_model_dir), "method": "sga",
        "method_args": {"r": -0.8, "k": 4, "adaptive": True, "adaptive_every": 2,
                        "r_min": -3.0, "r_max": 0.9},
        "data": {"forget": str(demo_dir / "forget.jsonl"), "normals": str(idk_normals_file)},
        "training": {"batch_size": 4, "max_steps": 5, "lr": 1e-3, "probe_every": 0,
                     "eval_nll": False},
        "eval": {"enabled": False},
    })
    run = create_run(cfg, tmp_path / "runs")
    st = run_foreground(run, echo=lambda m: None)
    assert st["state"] == "completed", (run / "train.log").read_text()[-2000:]
    m = metrics(run)
    assert len(m) == 5
    assert all(-3.0 <= row["r"] <= 0.9 for row in m)
    assert [row["r_star"] is not None for row in m] == [True, False, True, False, True]
    assert m[1]["r"] == m[0]["r"]  # steps between recomputations keep the last r
    for row in m:  # the logged loss is the SGA loss at the logged r
        c_f = -(1 - row["r"] + row["r"] / 4)
        c_n = -row["r"] / 4
        assert row["loss"] == pytest.approx(c_f * row["forget_nll"] + 3 * c_n * row["normal_nll"],
                                            rel=1e-4)
