"""``training.report_to`` (sga_core.train.trackers): names checked when the config is read,
a tracker that is not installed refused in one line before anything runs, the config made
into tracker hyperparameters."""

from __future__ import annotations

import importlib.util

import pytest

from sga_core.config import TrainConfig, TrainingArgs
from sga_core.params import ConfigError, from_dict
from sga_core.train import trackers


def _cfg(report_to, tmp_path):
    forget = tmp_path / "f.jsonl"
    forget.write_text('{"question": "q", "answer": "a"}\n')
    return TrainConfig.from_dict({"method": "ga", "data": {"forget": str(forget)},
                                  "training": {"report_to": report_to}})


def test_report_to_reads_a_name_a_list_or_none(tmp_path):
    assert _cfg("none", tmp_path).training.report_to == []
    assert _cfg([], tmp_path).training.report_to == []
    assert _cfg("tensorboard, tensorboard", tmp_path).training.report_to == ["tensorboard"]
    assert _cfg(["none", "tensorboard"], tmp_path).training.report_to == ["tensorboard"]


def test_an_unknown_tracker_names_the_setting():
    with pytest.raises(ConfigError, match=r"^report_to: 'tensorbord' is not a tracker"):
        from_dict(TrainingArgs, {"report_to": "tensorbord"})


@pytest.mark.parametrize("name", ["wandb", "mlflow"])
def test_an_optional_tracker_not_installed_is_one_clear_line(name, tmp_path):
    if importlib.util.find_spec(name) is not None:
        pytest.skip(f"{name} is installed here")
    with pytest.raises(ConfigError) as err:
        _cfg(["tensorboard", name], tmp_path)
    assert str(err.value) == (f"training.report_to: {name} is asked for but not installed "
                              f"here (pip install {name}), or leave it out of report_to")


def test_the_config_becomes_flat_hyperparameters(tmp_path):
    cfg = _cfg("tensorboard", tmp_path)
    cfg.group, cfg.sweep = "g", "s"
    flat = trackers.flat_config(cfg.to_dict())
    assert flat["training.lr"] == 1e-5 and flat["method"] == "ga"
    assert flat["training.report_to"] == '["tensorboard"]'
    assert flat["eval.reference"] == "null"
    assert all(isinstance(v, (bool, int, float, str)) for v in flat.values())
    kw = trackers.init_kwargs(cfg)
    assert kw["wandb"]["group"] == "g" and "sweep:s" in kw["wandb"]["tags"]
    assert kw["mlflow"]["tags"] == {"sweep": "s", "group": "g", "method": "ga"}


def test_scalars_keep_finite_numbers_only():
    assert trackers.scalars({"a": 1, "b": None, "c": float("nan"), "d": True, "e": 0.5},
                            "train") == {"train/a": 1.0, "train/e": 0.5}
