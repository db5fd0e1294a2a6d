"""YAML alias bombs: a few hundred bytes of nested aliases stand for billions of values.
Every YAML read (presets, run configs, answer templates, run listings) refuses a document
whose aliases expand past a bound before anything is built from it, with a one-line error
naming the file; the bound is a count of values, so a bomb fails without being walked."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sga_core.config import ConfigError, load_config
from sga_core.fileio import MAX_YAML_VALUES, expanded_size, load_yaml
from sga_core.presets import load_preset


def bomb(levels: int = 8, indent: str = "    ") -> str:
    """``levels`` nested aliases, ten-fold each: 10**(levels + 1) values in ~500 bytes."""
    return (f"{indent}a: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{indent}b{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n"
        for i in range(1, levels + 1)))


def test_expanded_size_counts_aliases_over_the_shared_graph():
    node = yaml.compose("a: &x [1, 2]\nb: [*x, *x]\n")
    # mapping + 2 keys + list(1 + 2) + list(1 + 3 + 3)
    assert expanded_size(node) == 1 + 2 + 3 + 7
    big = yaml.compose("eval:\n  sets:\n" + bomb(8))
    assert expanded_size(big, limit=MAX_YAML_VALUES) > MAX_YAML_VALUES


def test_preset_alias_bomb_under_eval_sets_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text("eval:\n  sets:\n" + bomb(8))
    assert path.stat().st_size < 700
    with pytest.raises(ConfigError) as exc:
        load_preset(path)
    message = str(exc.value)
    assert message.startswith("bomb.yaml: ") and "expands to more than" in message
    assert "\n" not in message


def test_a_modest_bomb_is_refused_too_and_sharing_below_the_bound_loads(tmp_path):
    # 10**6 values: today's loader walked them all and answered with another message
    path = tmp_path / "six.yaml"
    path.write_text("eval:\n  sets:\n" + bomb(5))
    with pytest.raises(ConfigError, match=r"six\.yaml: the YAML expands to more than"):
        load_preset(path)
    ok = load_yaml("a: &x [1, 2]\nb: *x\n", "ok.yaml")
    assert ok == {"a": [1, 2], "b": [1, 2]}


def test_run_config_with_a_bomb_in_notes_is_refused(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("notes:\n" + bomb(8, "  "))
    with pytest.raises(ConfigError, match="config.yaml.*expands to more than"):
        load_config(path)


def test_run_listing_and_templates_refuse_a_bomb(tmp_path):
    from sga_core.normals.templates import TemplateError, list_templates
    from sga_core.runs.listing import _config_of

    run = tmp_path / "r1"
    run.mkdir()
    (run / "config.yaml").write_text("notes:\n" + bomb(8, "  "))
    assert _config_of(run / "config.yaml") == {}  # listed as a broken config
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "boom.yaml").write_text("name: boom\nextra:\n" + bomb(8, "  "))
    try:
        list_templates(folder)
    except TemplateError as exc:
        assert "boom.yaml" in str(exc) and "expands" in str(exc)


def test_every_yaml_read_in_the_code_goes_through_the_bounded_loader():
    root = Path(__file__).resolve().parents[3]
    offenders = []
    for folder in ("sga_core", "app_pages", "ui", "bench", "tools"):
        for path in (root / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for needle in ("yaml.safe_load(", "yaml.load(", "yaml.full_load(",
                           "yaml.unsafe_load(", "yaml.load_all(", "yaml.safe_load_all("):
                if needle in text:
                    offenders.append(f"{path.relative_to(root)}: {needle}")
    assert offenders == []
