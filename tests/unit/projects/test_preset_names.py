"""Preset names on save: a name of hundreds of characters (the disk refuses it) and a name
that differs from an existing preset's only in case or by look-alike characters (NFKC and
case folding make them one) are clear ConfigErrors naming the names, nothing written."""

from __future__ import annotations

import pytest

from sga_core import workbench as wb
from sga_core.params import ConfigError
from sga_core.projects import create_demo_project


@pytest.fixture()
def project_cfg(tmp_path):
    project = create_demo_project(root=tmp_path / "ws")
    cfg = wb.build_config(project, method="ga", method_args={}, training={}, launch={},
                          model="embedded:smollm2")
    return project, cfg


def presets(project) -> list[str]:
    folder = project.path / "presets"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_preset_name_of_250_characters_is_refused_by_name(project_cfg):
    project, cfg = project_cfg
    name = "p" * 260
    with pytest.raises(ConfigError) as exc:
        wb.save_preset(project, name, cfg)
    message = str(exc.value)
    assert "p" * 30 in message and "260 characters" in message and "at most 64" in message
    assert presets(project) == []
    assert wb.save_preset(project, "p" * 64, cfg).name == "p" * 64 + ".yaml"


@pytest.mark.parametrize("other", ["MyRun", "MYRUN", "\uff4d\uff59\uff52\uff55\uff4e",
                                   "myr\u1d64n"])
def test_preset_names_that_differ_only_in_case_or_look_alikes_are_refused(project_cfg,
                                                                            other):
    project, cfg = project_cfg
    wb.save_preset(project, "myrun", cfg)
    with pytest.raises(ConfigError) as exc:
        wb.save_preset(project, other, cfg)
    assert "myrun" in str(exc.value) and "case or by look-alike" in str(exc.value)
    assert presets(project) == ["myrun.yaml"]
    wb.save_preset(project, "myrun", cfg)  # the same name replaces it
    assert presets(project) == ["myrun.yaml"]


def test_a_shipped_preset_name_in_other_case_is_refused(project_cfg):
    project, cfg = project_cfg
    shipped = wb.DEMO_PRESET.stem
    with pytest.raises(ConfigError, match=shipped):
        wb.save_preset(project, shipped.upper(), cfg)
