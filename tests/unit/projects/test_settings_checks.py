"""Settings each valid alone that cannot work, refused with a message naming the setting
(or flag) and the value as given: adaptive bounds the wrong way round, probe rows outside the
forget set, zero epochs, K = 1 with generated 'I don't know' normals, a sweep list with no
values, and a value just above a bound printed in full."""

from __future__ import annotations

import pytest

from sga_core.cli import main
from sga_core.config import TrainConfig
from sga_core.data import load_dataset
from sga_core.methods.sga import SGAConfig
from sga_core.params import ConfigError, from_dict
from sga_core.projects.training import parse_r_values
from sga_core.runs.create import create_run


def train(capsys, runs_dir, demo_dir, *argv: str) -> tuple[int, str]:
    code = main(["train", "--forget", str(demo_dir / "forget.jsonl"), "--runs-dir",
                 str(runs_dir), "--no-launch", *argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def run_folders(runs_dir) -> list[str]:
    return sorted(p.name for p in runs_dir.iterdir()) if runs_dir.exists() else []


def test_adaptive_bounds_the_wrong_way_round_are_refused(capsys, runs_dir, demo_dir):
    with pytest.raises(ConfigError, match=r"r_min \(1\.0\) is above r_max \(-5\.0\)"):
        from_dict(SGAConfig, {"adaptive": True, "r_min": 1, "r_max": -5}, "method_args.")
    code, err = train(capsys, runs_dir, demo_dir, "--method", "sga", "--adaptive",
                      "--r-min", "1", "--r-max", "-5")
    assert code == 2 and "method_args.r_min (1.0) is above r_max (-5.0)" in err
    assert run_folders(runs_dir) == []
    assert from_dict(SGAConfig, {"r_min": -1, "r_max": -1}).r_min == -1


def test_probe_rows_outside_the_forget_set_are_refused_at_launch(runs_dir, demo_dir):
    n = len(load_dataset(demo_dir / "forget.jsonl"))
    cfg = TrainConfig.from_dict({"method": "ga", "data": {"forget": str(demo_dir /
                                                                        "forget.jsonl")},
                                 "training": {"probe_rows": [0, 100000]}})
    with pytest.raises(ConfigError) as exc:
        create_run(cfg, runs_dir)
    message = str(exc.value)
    assert "training.probe_rows" in message and "100000" in message and f"{n} rows" in message
    assert [p for p in run_folders(runs_dir) if not p.startswith(".")] == []
    assert not [p for p in run_folders(runs_dir) if p.startswith(".creating-")]
    cfg.training.probe_rows = [0, n - 1]
    assert create_run(cfg, runs_dir).exists()


def test_zero_epochs_is_refused_unless_steps_are_given(capsys, runs_dir, demo_dir):
    code, err = train(capsys, runs_dir, demo_dir, "--method", "ga", "--epochs", "0")
    assert code == 2 and "training.epochs: 0.0 trains no step" in err
    assert run_folders(runs_dir) == []
    code, err = train(capsys, runs_dir, demo_dir, "--method", "ga", "--epochs", "0",
                      "--max-steps", "2")
    assert code == 0, err


def test_k1_with_idk_normals_names_the_flag(capsys, runs_dir, demo_dir):
    code, err = train(capsys, runs_dir, demo_dir, "--method", "sga", "--k", "1")
    assert code == 2
    assert "--k 1" in err and "normals.jsonl" not in err and "file is empty" not in err
    assert run_folders(runs_dir) == []


@pytest.mark.parametrize("values", [",,,", " ; ", ""])
def test_sweep_values_with_no_value_are_an_error_naming_the_flag(capsys, runs_dir, demo_dir,
                                                                  values):
    code, err = train(capsys, runs_dir, demo_dir, "--method", "sga", "--normals",
                      str(demo_dir / "forget.jsonl"), "--sweep-values", values)
    assert code == 2 and "--sweep-values" in err, err
    assert run_folders(runs_dir) == []


def test_a_value_just_above_a_bound_is_printed_as_given():
    with pytest.raises(ConfigError, match=r"got 1\.0000001\b"):
        parse_r_values("0, 1.0000001")
    with pytest.raises(ConfigError, match=r"1\.0000001 is above the maximum 1\.0"):
        from_dict(SGAConfig, {"r": 1.0000001})


def test_a_value_of_the_wrong_type_is_named_in_words(capsys, tmp_path, demo_dir):
    """A new user typed "0, 1, banana, 99" as probe rows and read "cannot read ['0', '1',
    'banana', '99'] as list[int]": the message names the item that is not a number, in
    words, and how a list is written; a single setting says what it must be."""
    code, err = train(capsys, tmp_path / "runs", demo_dir, "--probe-rows", "0, 1, banana, 99")
    assert code != 0 and "training.probe_rows: 'banana' is not a whole number (a list is " \
        "written with commas or spaces, e.g. 0, 3, 7)" in err, err
    with pytest.raises(ConfigError, match=r"training.max_steps: '2.5' is not a whole number"):
        from_dict(TrainConfig, {"data": {"forget": "f.jsonl"},
                                "training": {"max_steps": "2.5"}})
    with pytest.raises(ConfigError, match=r"training.lr: 'fast' is not a number$"):
        from_dict(TrainConfig, {"data": {"forget": "f.jsonl"}, "training": {"lr": "fast"}})
    assert run_folders(tmp_path / "runs") == []
