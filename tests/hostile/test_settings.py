"""List settings read item by item with the same rule as single ones: a whole-number list
(``training.probe_rows``) refuses 1.5 instead of probing row 1, and a true/false item, naming
the setting and the value as given; the same through a preset, a config file and the CLI."""

from __future__ import annotations

import pytest

from sga_core.config import TrainingArgs
from sga_core.params import ConfigError, from_dict
from sga_core.presets import parse_preset


@pytest.mark.parametrize("rows", [[1.5], [0, 2.000001], [True], ["1.5"]])
def test_probe_rows_must_be_whole_numbers(rows):
    with pytest.raises(ConfigError) as err:
        from_dict(TrainingArgs, {"probe_rows": rows}, "training.")
    assert "training.probe_rows" in str(err.value)
    with pytest.raises(ConfigError):
        parse_preset(f"training: {{probe_rows: {rows!r}}}\n".replace("True", "true"),
                     "p.yaml")


def test_whole_number_items_written_as_floats_are_kept():
    cfg = from_dict(TrainingArgs, {"probe_rows": [1.0, 2, "3"]}, "training.")
    assert cfg.probe_rows == [1, 2, 3]
    assert all(type(r) is int for r in cfg.probe_rows)


def test_sweep_values_starting_with_a_minus_need_no_quotes(tmp_path, capsys, tiny_model_dir,
                                                            idk_normals_file):
    """``--sweep-values -0.8,-0.4`` (no spaces, as a shell user types it) is the list of
    values, not an unknown option that leaves the flag 'expected one argument'."""
    from pathlib import Path

    import yaml

    from sga_core.cli import main

    demo = Path(__file__).resolve().parents[2] / "assets" / "demo"
    runs = tmp_path / "runs"
    code = main(["train", "--model", str(tiny_model_dir), "--forget",
                 str(demo / "forget.jsonl"), "--retain", str(demo / "retain.jsonl"),
                 "--normals", str(idk_normals_file), "--k", "4", "--no-launch", "--cpu",
                 "--runs-dir", str(runs), "--sweep-values", "-0.8,-0.4"])
    assert code == 0, capsys.readouterr().err
    rs = sorted(yaml.safe_load((d / "config.yaml").read_text())["method_args"]["r"]
                for d in runs.iterdir() if (d / "config.yaml").exists())
    assert rs == [-0.8, -0.4]
