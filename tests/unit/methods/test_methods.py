"""Each baseline's per-unit loss against its definition, on a tiny model."""

from __future__ import annotations

import math

import pytest

from sga_core.methods import MethodData, get_method, method_names
from sga_core.methods.base import flatten
from sga_core.model.forward import forward_stats


@pytest.fixture(scope="module")
def setup(tiny_model_dir, demo_dir):
    from sga_core.assets import idk_templates as load_idk_templates
    from sga_core.data import load_qa
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    model = load_model(str(tiny_model_dir)).double()
    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    data = MethodData("qa", load_qa(demo_dir / "forget.jsonl")[:3],
                      retain=load_qa(demo_dir / "retain.jsonl")[:5],
                      idk_templates=load_idk_templates())
    return model, enc, data


def losses(setup, name, with_ref=False, **cfg):
    model, enc, data = setup
    cls = get_method(name)
    method = cls(cls.Config(**cfg))
    units = method.build_units(data, enc)
    seqs, ids = flatten(units)
    stats = forward_stats(model, seqs, ids, enc.pad_id, "cpu", keep_logits=method.needs_logits)
    if with_ref:  # the frozen reference is the starting model itself
        stats.ref = forward_stats(model, seqs, ids, enc.pad_id, "cpu",
                                  keep_logits=method.needs_logits)
    per_unit = method.unit_losses(stats, len(units)).tolist()
    nll = stats.mean_nll.tolist()
    by_unit = {}
    for role, u, v in zip(stats.roles, ids, nll):
        by_unit.setdefault(u, {})[role] = v
    return per_unit, by_unit


def test_registry_lists_the_baselines():
    # and the paper's other baselines and newer methods (docs/spec.md#16-other-methods, tested in
    # tests/unit/methods/test_paper_methods)
    assert set(method_names(unlearning_only=True)) == {
        "sga", "ga", "graddiff", "kl", "npo", "idk",
        "gd", "npo-rt", "simnpo", "flat", "dpo", "dpo-rt", "llmu", "mismatch", "rmu",
        "task-vector", "whp", "wga", "satimp", "undial", "ceu", "pdu", "altpo"}
    assert "finetune" in method_names()


def test_ga(setup):
    per_unit, nll = losses(setup, "ga")
    assert per_unit == pytest.approx([-nll[u]["forget"] for u in range(3)])


def test_graddiff(setup):
    per_unit, nll = losses(setup, "graddiff", retain_weight=0.5)
    assert per_unit == pytest.approx([-nll[u]["forget"] + 0.5 * nll[u]["retain"]
                                      for u in range(3)])


def test_kl_is_plain_ascent_at_the_reference(setup):
    per_unit, nll = losses(setup, "kl", with_ref=True, retain_weight=2.0)
    assert per_unit == pytest.approx([-nll[u]["forget"] for u in range(3)], abs=1e-9)


def test_npo_at_the_reference(setup):
    beta = 0.5
    per_unit, _ = losses(setup, "npo", with_ref=True, beta=beta)
    # log-ratio 0: -(2/beta) * logsigmoid(0) = (2/beta) * ln 2
    assert per_unit == pytest.approx([2 / beta * math.log(2)] * 3)


def test_idk(setup):
    per_unit, nll = losses(setup, "idk", retain_weight=1.0)
    assert per_unit == pytest.approx([nll[u]["idk"] + nll[u]["retain"] for u in range(3)])
    _, enc, data = setup
    cls = get_method("idk")
    unit = cls(cls.Config()).build_units(data, enc)[0]
    answer = enc.tok.decode([t for t in unit.seqs[0].labels if t != -100][:-1]).strip()
    assert answer in data.idk_templates
