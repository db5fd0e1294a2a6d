"""Every registered method meets the contract (tests/helpers/method_contract.py): settings through
CLI flags and YAML, units on the tiny model, a finite loss, gradients, one training step."""

from __future__ import annotations

import dataclasses

import pytest

from sga_core.methods import method_names
from tests.helpers import method_contract as contract


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    return load_model(str(tiny_model_dir)), Encoder(load_tokenizer(str(tiny_model_dir)))


@pytest.mark.parametrize("name", method_names())
def test_flags_and_yaml_round_trip(name, demo_dir, idk_normals_file):
    contract.check_flags_and_yaml(name, demo_dir / "forget.jsonl", idk_normals_file)


@pytest.mark.parametrize("name", method_names())
def test_units_loss_and_gradients(name, tiny, demo_dir):
    model, enc = tiny
    contract.check_units_loss_and_gradients(name, model, enc, contract.method_data(demo_dir))


@pytest.mark.parametrize("name", method_names())
def test_one_training_step(name, tiny_model_dir, demo_dir, idk_normals_file, tmp_path):
    contract.check_one_training_step(name, tiny_model_dir, demo_dir / "forget.jsonl",
                                     demo_dir / "retain.jsonl", idk_normals_file,
                                     tmp_path / "run")


def test_every_method_says_what_it_needs():
    from sga_core.methods import REGISTRY
    from sga_core.methods.base import NEEDS

    assert REGISTRY  # each method is checked below
    for cls in REGISTRY.values():
        assert cls.title and set(cls.needs) <= set(NEEDS)
        assert cls.sweep_param is None or cls.sweep_param in {
            f.name for f in dataclasses.fields(cls.Config)}
