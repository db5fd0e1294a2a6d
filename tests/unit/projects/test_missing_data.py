"""What a method trains on and a project lacks is refused in the user's words, saying how to
get it, before any config is checked (the Train page's Preview and Launch)."""

from __future__ import annotations

import pytest

from sga_core.assets import DEMO_DIR
from sga_core.params import ConfigError
from sga_core.projects import create_project
from sga_core.projects.training import build_config


def _config(project, method: str, normals=None):
    return build_config(project, method=method, method_args={}, training={}, launch={},
                        model="embedded:smollm2", normals=normals)


def test_missing_retain_data_is_said_with_the_way_to_get_it(tmp_path):
    p = create_project("no-retain", DEMO_DIR / "forget.jsonl", root=tmp_path)
    with pytest.raises(ConfigError) as err:
        _config(p, "graddiff")
    said = str(err.value)
    assert said.startswith("GradDiff trains on retain rows, and project no-retain has no "
                           "retain data") and "Data page" in said and "data.retain" not in said
    _config(p, "ga")  # a method that needs neither


def test_normal_answers_not_ready_say_why(tmp_path):
    p = create_project("demo-copy", DEMO_DIR / "forget.jsonl", DEMO_DIR / "retain.jsonl",
                       root=tmp_path)
    with pytest.raises(ConfigError, match=r"SGA trains on normal answers .* not ready "
                                          r"\(no normal answers yet\)\. Generate them on the "
                                          r"Normal answers page"):
        _config(p, "sga")


def test_altpo_is_never_offered_i_dont_know_answers(tmp_path):
    """AltPO prefers alternate answers: its message names the altpo_alternate template, and
    neither it nor the CLI offers refusals in their place."""
    p = create_project("alt", DEMO_DIR / "forget.jsonl", DEMO_DIR / "retain.jsonl",
                       root=tmp_path)
    with pytest.raises(ConfigError) as err:
        _config(p, "altpo")
    said = str(err.value)
    assert said.startswith("AltPO trains on normal answers") and "altpo_alternate" in said
    assert "tick" not in said
    with pytest.raises(ConfigError) as err:
        _config(p, "sga")
    assert "tick" in str(err.value)  # the methods that can take refusals still offer them
