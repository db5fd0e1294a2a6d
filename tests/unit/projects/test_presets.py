"""Validated presets and bounded sweep specs (library side): a bad preset is
a one-line ConfigError naming the field and the expected type, in the library and the CLI."""

from __future__ import annotations

import pytest

from sga_core.config import ConfigError
from sga_core.presets import load_preset, parse_preset, validate_preset
from sga_core.projects.training import MAX_SWEEP_RUNS, parse_r_values


def config_error(fn, *args, **kwargs) -> str:
    with pytest.raises(ConfigError) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_the_shipped_demo_preset_is_valid():
    from sga_core.assets import PRESETS_DIR

    preset = load_preset(PRESETS_DIR / "demo-sga.yaml")
    assert preset["method"] == "sga" and preset["method_args"]["k"] == 4
    assert preset["training"]["lr"] == 1e-5 and preset["training"]["probe_rows"] == [7, 8]


def test_clean_dict_holds_only_given_keys_typed():
    preset = validate_preset({"method": "sga", "method_args": {"r": "-0.5", "k": 4.0},
                              "training": {"lr": "1e-5", "epochs": 2, "probe_rows": "1, 2"},
                              "launch": {"cpu": "yes"}, "notes": 12})
    assert preset == {"method": "sga", "method_args": {"r": -0.5, "k": 4},
                      "training": {"lr": 1e-5, "epochs": 2.0, "probe_rows": [1, 2]},
                      "launch": {"cpu": True}, "notes": "12"}
    assert isinstance(preset["method_args"]["k"], int)


@pytest.mark.parametrize("preset, field, expected", [
    ({"training": 5}, "training", "a mapping"),
    ({"training": 0}, "training", "a mapping"),
    ({"launch": ""}, "launch", "a mapping"),
    ({"method_args": False}, "method_args", "a mapping"),
    ({"training": [1, 2]}, "training", "a mapping"),
    ({"method_args": {"r": [1, 2]}}, "method_args.r", "a number"),
    ({"method_args": [1, 2]}, "method_args", "a mapping"),
    ({"model": {"a": 1}}, "model", "text"),
    ({"model": ""}, "model", "model id"),
    ({"launch": "x"}, "launch", "a mapping"),
    ({"launch": {"cpu": [True]}}, "launch.cpu", "true or false"),
    ({"training": {"max_steps": 1.5}}, "training.max_steps", "a whole number"),
    ({"training": {"max_steps": float("inf")}}, "training.max_steps", "a whole number"),
    ({"training": {"lr": float("nan")}}, "training.lr", "NaN"),
    ({"training": {"lr": 5}}, "training.lr", "maximum"),
    ({"training": {"probe_rows": {"a": 1}}}, "training.probe_rows", "a list"),
    ({"training": {"probe_rows": list(range(100))}}, "training.probe_rows", "at most"),
    ({"training": {"bogus": 1}}, "training.bogus", "unknown setting"),
    ({"method": "nope"}, "method", "unknown method"),
    ({"method": ["sga"]}, "method", "unknown method"),
    ({"method": "ga", "method_args": {"r": 0.3}}, "method_args.r", "unknown setting"),
    ({"eval": {"sets": ["a"]}}, "eval.sets", "a mapping"),
    ({"eval": {"sets": {"a": 3}}}, "eval.sets.a", "file path"),
    ({"eval": {"sets": {"../x": "f"}}}, "eval.sets", "set name"),
    ({"notes": ["x"]}, "notes", "text"),
    ({"colour": "red"}, "colour", "unknown setting"),
    ({1: "x"}, "preset", "text"),
    ([1, 2], "preset", "YAML mapping"),
    ("just text", "preset", "YAML mapping"),
])
def test_bad_presets_name_field_and_type(preset, field, expected):
    message = config_error(validate_preset, preset, "mine.yaml")
    assert message.startswith("mine.yaml: ") and field in message and expected in message


def test_run_fields_are_dropped_or_checked():
    raw = {"run_id": "x", "data": {"forget": "f.jsonl"}, "sweep": "-1:0:0.5", "method": "sga"}
    assert validate_preset(raw) == {"method": "sga"}
    assert validate_preset(raw, keep_run_fields=True) == {
        "method": "sga", "run_id": "x", "data": {"forget": "f.jsonl"}, "sweep": "-1:0:0.5"}
    assert "run_id" in config_error(validate_preset, {"run_id": "../up"}, keep_run_fields=True)
    assert "data" in config_error(validate_preset, {"data": "x"}, keep_run_fields=True)


@pytest.mark.parametrize("text, expected", [
    ("method: sga\ntraining: {lr: [1,\n", "YAML error at line"),
    ("a: b: c\n", "YAML error at line 1"),
    ("!!python/object:os.system {}\n", "!!python/object:os.system is not allowed"),
    ("x: !!python/name:os.system\n", "is not allowed"),
    ("training: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
    ("notes: " + "7" * 5000 + "\n", "cannot be read"),
    ("\t- tab\n", "YAML error"),
])
def test_yaml_errors_are_one_line(text, expected):
    assert expected in config_error(parse_preset, text, "p.yaml")


def test_load_preset_file_errors(tmp_path):
    path = tmp_path / "latin.yaml"
    path.write_bytes("notes: caf\u00e9\n".encode("latin-1"))
    assert "latin.yaml: not UTF-8" in config_error(load_preset, path)
    assert "missing.yaml" in config_error(load_preset, tmp_path / "missing.yaml")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert load_preset(empty) == {}
    assert str(tmp_path) not in config_error(load_preset, tmp_path / "missing.yaml")


def test_alias_bomb_is_cheap():
    """A billion laughs: 10**9 strings if expanded; refused without expanding it, by the
    bound on the expanded size (before any type check could walk it)."""
    import time

    items = ["&a0 [x, x, x, x, x, x, x, x, x, x]"]
    items += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    start = time.perf_counter()
    for key in ("notes", "method_args: {r", "training: {probe_rows"):
        close = "}" * key.count("{")
        message = config_error(parse_preset, f"{key}: [{', '.join(items)}]{close}\n")
        assert "the YAML expands to more than" in message
    assert time.perf_counter() - start < 2.0


# ----------------------------------------------------------------------------------- CLI


@pytest.mark.parametrize("text, expected", [
    ("training: 5\n", "training: expected a mapping"),
    ("method_args: {r: [1, 2]}\n", "method_args.r: expected a number"),
    ("method: sga\ntraining: {lr: [1,\n", "YAML error at line"),
    ("!!python/object:os.system {}\n", "is not allowed"),
    ("launch: x\n", "launch: expected a mapping"),
])
def test_cli_reports_preset_errors_in_one_line(tmp_path, demo_dir, capsys, text, expected):
    from sga_core.cli import main

    preset = tmp_path / "bad.yaml"
    preset.write_text(text, encoding="utf-8")
    runs = tmp_path / "runs"
    code = main(["train", "--preset", str(preset), "--forget", str(demo_dir / "forget.jsonl"),
                 "--no-launch", "--runs-dir", str(runs)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: bad.yaml") and expected in err
    assert "Traceback" not in err and not runs.exists()


# ---------------------------------------------------------------------------------- sweep


@pytest.mark.parametrize("text, expected", [
    ("0:inf:1", "not a finite number"),
    ("0:1:nan", "not a finite number"),
    ("nan", "not a finite number"),
    ("-1, inf", "not a finite number"),
    ("-1:0:0", "never reaches"),
    ("0:-1:0.5", "never reaches"),
    ("-1e308:1:1e-308", f"at most {MAX_SWEEP_RUNS}"),
    ("-100:0:0.5", f"at most {MAX_SWEEP_RUNS}"),
    (", ".join(str(-i) for i in range(200)), f"at most {MAX_SWEEP_RUNS}"),
    ("-1:0", "start:stop:step"),
    ("a, b", "not a number"),
    ("2", "<= 1"),
    ("", "enter r values"),
])
def test_sweep_specs_are_bounded(text, expected):
    assert expected in config_error(parse_r_values, text)


def test_sweep_specs_that_work():
    assert parse_r_values("-1:0:0.5") == [-1.0, -0.5, 0.0]
    assert parse_r_values("-1, -1, 0.4") == [-1.0, 0.4]
    assert len(parse_r_values("-99:0:1")) == MAX_SWEEP_RUNS
