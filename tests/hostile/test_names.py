"""Preset names that read the same as another preset's but are spelled with letters of
another script (Cyrillic 'у', 'о', 'е', Greek 'ο', 'α' look exactly like Latin 'y', 'o', 'e',
'o', 'a'): two presets a person cannot tell apart in the Load preset list. Case folding and
NFKC do not join them (they are different letters, not variants), so they are refused like
names differing only in case."""

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


@pytest.mark.parametrize("other", ["m\u0443run",        # Cyrillic u (looks like y)
                                   "myrun-\u043e",       # Cyrillic o
                                   "MY\u0420UN",         # Cyrillic Er (looks like Latin P)
                                   "myrun-\u03bf",       # Greek omicron
                                   "myrun-\u039f"])      # Greek capital omicron
def test_look_alike_letters_of_other_scripts_are_refused(project_cfg, other):
    project, cfg = project_cfg
    wb.save_preset(project, "myrun", cfg)
    wb.save_preset(project, "myrun-o", cfg)
    wb.save_preset(project, "MYPUN", cfg)
    with pytest.raises(ConfigError) as exc:
        wb.save_preset(project, other, cfg)
    assert "look-alike" in str(exc.value)
    folder = project.path / "presets"
    assert sorted(p.name for p in folder.iterdir()) == ["MYPUN.yaml", "myrun-o.yaml",
                                                       "myrun.yaml"]


def test_names_in_one_other_script_are_kept(project_cfg):
    project, cfg = project_cfg
    wb.save_preset(project, "\u043c\u043e\u0439", cfg)  # Cyrillic 'мой': no Latin twin
    wb.save_preset(project, "moi", cfg)
    assert {p.stem for p in (project.path / "presets").iterdir()} == {"\u043c\u043e\u0439", "moi"}
