"""The shipped RMU-on-WMDP preset (assets/presets/wmdp-rmu.yaml): it loads as a valid preset,
builds RMU's config with the paper's values, and on a model of 8 layers RMU then trains
exactly the weights open-unlearning's WMDP experiment names
(configs/experiment/unlearn/wmdp/default.yaml at d3d7cf9: ``trainable_params_regex``
``model\\.layers\\.(5|6|7)\\.mlp\\.down_proj\\.weight``, ``module_regex`` layer 7)."""

from __future__ import annotations

import re

import pytest

from sga_core.assets import PRESETS_DIR
from sga_core.config import TrainConfig
from sga_core.presets import list_presets, load_preset

OU_TRAINABLE = r"model\.layers\.(5|6|7)\.mlp\.down_proj\.weight"


def test_the_preset_builds_rmus_wmdp_config(tmp_path):
    preset = load_preset(PRESETS_DIR / "wmdp-rmu.yaml")
    assert preset["method"] == "rmu" and preset["eval"]["protocol"] == "wmdp"
    cfg = TrainConfig.from_dict({**preset, "data": {"forget": "forget.jsonl",
                                                    "retain": "retain.jsonl"}})
    rmu = cfg.method_config()
    assert (rmu.layer, rmu.steering_coeff, rmu.retain_weight, rmu.trainable) == \
        (7, 6.5, 1200.0, "down_proj")
    assert (cfg.training.lr, cfg.training.batch_size, cfg.training.max_steps,
            cfg.training.max_length, cfg.training.scheduler) == (5e-5, 4, 150, 512, "constant")

    class Shipped:  # any project lists the shipped presets
        path = tmp_path

    assert PRESETS_DIR / "wmdp-rmu.yaml" in list_presets(Shipped)


def test_rmu_from_the_preset_trains_layers_5_to_7_down_proj_and_steers_layer_7(tmp_path):
    from transformers import AutoModelForCausalLM

    from sga_core.methods.rmu import RMU
    from sga_core.model.tiny import build_tiny_model

    preset = load_preset(PRESETS_DIR / "wmdp-rmu.yaml")
    cfg = TrainConfig.from_dict({**preset, "data": {"forget": "f.jsonl", "retain": "r.jsonl"}})
    model = AutoModelForCausalLM.from_pretrained(build_tiny_model(tmp_path / "m", layers=8))
    method = RMU(cfg.method_config())
    method.attach(model, model)
    try:
        trained = [n for n, p in model.named_parameters() if p.requires_grad]
        assert trained == [n for n, _ in model.named_parameters()
                           if re.fullmatch(OU_TRAINABLE, n)]
        assert len(trained) == 3 and method.layer == 7
        assert float(method.control.norm()) == pytest.approx(6.5, rel=1e-6)
    finally:
        method.detach()
