"""r* (docs/spec.md#21-closed-form): the closed form on hand-built gradients, and against the real
update norm."""

from __future__ import annotations

import pytest
import torch

from sga_core.methods.sga.rstar import RStar, rstar_from_products, summarize, update_norm_sq


def products(a, b):
    a, b = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    return float(a @ a), float(a @ b), float(b @ b)


@pytest.mark.parametrize(("a", "b", "k", "conv", "expected"), [
    # K=2, a=(1,0), b=(0,1): w = 0.5(a-b) -> <a,w> = 0.5, |w|^2 = 0.5 -> r* = 1
    ([1.0, 0.0], [0.0, 1.0], 2, "label", 1.0),
    ([1.0, 0.0], [0.0, 1.0], 2, "objective", 1.0),
    # K=4, a=(2,0), b=(1,0): w = 0.75(a-b) = (0.75,0) -> 1.5/0.5625
    ([2.0, 0.0], [1.0, 0.0], 4, "label", 1.5 / 0.5625),
    # objective: w = 0.75(a+b) = (2.25,0) -> 4.5/5.0625
    ([2.0, 0.0], [1.0, 0.0], 4, "objective", 4.5 / 5.0625),
    # b opposite to a under label: w = 0.75(a-b) = 0.75*(3,0): r* = 4.5/5.0625 (positive)
    ([2.0, 0.0], [-1.0, 0.0], 4, "label", 4.5 / 5.0625),
])
def test_hand_built_cases(a, b, k, conv, expected):
    assert rstar_from_products(*products(a, b), k, conv) == pytest.approx(expected)


def test_formula_matches_the_definition():
    """r* minimizes ||-a + r w||^2 with w from docs/spec.md#21-closed-form, for random vectors."""
    g = torch.Generator().manual_seed(0)
    for conv in ("label", "objective"):
        for k in (2, 4, 7):
            a = torch.randn(50, generator=g, dtype=torch.float64)
            b = torch.randn(50, generator=g, dtype=torch.float64)
            c = (k - 1) / k
            w = c * (a - b) if conv == "label" else c * (a + b)
            rs = torch.linspace(-5, 5, 20001, dtype=torch.float64)
            norms = ((-a[None] + rs[:, None] * w[None]) ** 2).sum(1)
            best = rs[norms.argmin()].item()
            r = rstar_from_products(float(a @ a), float(a @ b), float(b @ b), k, conv)
            assert r == pytest.approx(best, abs=1e-3)
            assert update_norm_sq(r, float(a @ a), float(a @ b), float(b @ b), k, conv) == \
                pytest.approx(float(((-a + r * w) ** 2).sum()))


def test_undefined_when_w_is_zero():
    assert rstar_from_products(*products([1.0, 2.0], [1.0, 2.0]), 4, "label") is None
    assert rstar_from_products(*products([1.0, 2.0], [-1.0, -2.0]), 4, "objective") is None


def test_summary_iqr():
    rows = [RStar(i, v, 1 if v > 0 else -1, 0.1, 1.0, 1.0, 0.1)
            for i, v in enumerate([-2.0, -1.0, 0.5, 1.0, 3.0])]
    s = summarize(rows)
    assert (s["n"], s["n_positive"], s["n_negative"]) == (5, 3, 2)
    assert s["median"] == 0.5 and s["suggested_range"] == [-1.0, 1.0]


@pytest.mark.parametrize("convention", ["label", "objective"])
def test_closed_form_matches_numerical_minimum_on_tiny_model(tiny_model_dir, demo_dir,
                                                             idk_normals_file, convention):
    """On a real (tiny) model: the gradient norm of the actual SGA loss, as a function of r,
    is minimized at the analysis' r* (a numerical minimization over r)."""
    from sga_core.data import NormalTable, load_qa
    from sga_core.methods import MethodData, get_method
    from sga_core.methods.base import flatten
    from sga_core.methods.sga.rstar import analyze
    from sga_core.model.encoding import Encoder
    from sga_core.model.forward import forward_stats
    from sga_core.model.loading import load_model, load_tokenizer

    model = load_model(str(tiny_model_dir)).double()
    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    data = MethodData("qa", load_qa(demo_dir / "forget.jsonl")[:2],
                      normals=NormalTable.load(idk_normals_file))
    cls = get_method("sga")
    units = cls(cls.Config(r=0.0, k=4, convention=convention)).build_units(data, enc)
    res = analyze(model, enc, units[:1], 4, convention)
    r_star = res[0].r_star

    def grad_norm_sq(r):
        # the coefficients of docs/spec.md#12-coefficients-and-the-loss written out (r* may exceed
        # 1, which training refuses)
        c_f = -(1 - r + r / 4)
        c_n = -r / 4 if convention == "label" else r / 4
        model.zero_grad(set_to_none=True)
        seqs, ids = flatten(units[:1])
        stats = forward_stats(model, seqs, ids, enc.pad_id, "cpu")
        w = [c_f if role == "forget" else c_n for role in stats.roles]
        cls.weighted_sum(stats, w, 1).sum().backward()
        return sum(float((p.grad.double() ** 2).sum()) for p in model.parameters()
                   if p.grad is not None)

    # ||g(r)||^2 is an exact quadratic in r: three evaluations give its minimizer
    f = [grad_norm_sq(r) for r in (-1.0, 0.0, 1.0)]
    a2, a1 = (f[2] + f[0] - 2 * f[1]) / 2, (f[2] - f[0]) / 2
    numeric = -a1 / (2 * a2)
    assert r_star == pytest.approx(numeric, rel=1e-6, abs=1e-8)
    # and it really is a minimum: nearby r are worse
    assert grad_norm_sq(r_star) <= min(grad_norm_sq(r_star - 0.05), grad_norm_sq(r_star + 0.05))
    assert res[0].norm_a > 0 and res[0].norm_b > 0 and -1 <= res[0].cos_ab <= 1


def test_rstar_cli(tiny_model_dir, demo_dir, idk_normals_file, tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "rstar.json"
    proc = subprocess.run(
        [sys.executable, "-m", "sga_core", "rstar", "--model", str(tiny_model_dir),
         "--forget", str(demo_dir / "forget.jsonl"), "--normals", str(idk_normals_file),
         "--k", "4", "--last-n-layers", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    assert len(res["rows"]) == 10 and res["last_n_layers"] == 1
    assert "suggested range" in proc.stdout
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("row ")]
    assert len(lines) == 10 and all("r*=" in ln and "cos(a,b)=" in ln for ln in lines)
