"""Run ids are whole ids and never paths (docs/spec.md#51-run-ids-and-the-runs-folder): no command
touches a folder outside the runs folder, and a trailing newline is not a valid id."""

from __future__ import annotations

import json

import pytest

from sga_core.cli import main
from sga_core.config import TrainConfig, valid_run_id
from sga_core.params import ConfigError
from sga_core.runs.folder import run_path


@pytest.mark.parametrize("bad", ["../victim", "a/b", "abc\n", "ABC", "", ".hidden", "-x",
                                 "a" * 65, "/etc"])
def test_bad_ids_are_refused(bad, tmp_path):
    assert not valid_run_id(bad)
    with pytest.raises(ConfigError):
        run_path(bad, tmp_path)


def test_good_ids(tmp_path):
    for good in ("a", "sga-r-0p8-k4-20261121-213000", "0" * 64):
        assert valid_run_id(good)
        assert run_path(good, tmp_path) == tmp_path.resolve() / good


@pytest.mark.parametrize("action", ["cancel", "show"])
def test_cli_never_touches_a_folder_outside_the_runs_folder(action, tmp_path, capsys):
    runs = tmp_path / "runs"
    runs.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "config.yaml").write_text("method: sga\n")
    status = {"state": "running", "pid": 999999999}
    (victim / "status.json").write_text(json.dumps(status))
    before = sorted(p.name for p in victim.iterdir())
    assert main(["runs", action, "../victim", "--runs-dir", str(runs)]) == 2
    assert "run id" in capsys.readouterr().err
    assert sorted(p.name for p in victim.iterdir()) == before  # no CANCEL file
    assert json.loads((victim / "status.json").read_text()) == status


def test_a_config_with_a_newline_in_its_run_id_is_refused():
    with pytest.raises(ConfigError, match="run_id"):
        TrainConfig.from_dict({"run_id": "abc\n", "method": "ga",
                               "data": {"forget": "f.jsonl"}})


def test_a_given_id_that_exists_is_refused_as_taken(tmp_path, demo_dir, idk_normals_file):
    """A launch that names its run id is refused with RunIdTaken when that folder exists
    (the Train page then moves a previewed id on to the next free one)."""
    from sga_core.runs.create import RunIdTaken, create_run

    def cfg():
        c = TrainConfig()
        c.data.forget, c.data.retain = str(demo_dir / "forget.jsonl"), str(demo_dir /
                                                                             "retain.jsonl")
        c.data.normals = str(idk_normals_file)
        c.run_id = "taken-id"
        return c

    first = create_run(cfg(), tmp_path / "runs", state="cancelled")
    assert first.name == "taken-id"
    with pytest.raises(RunIdTaken, match="taken-id"):
        create_run(cfg(), tmp_path / "runs", state="cancelled")
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()
                  if not p.name.startswith(".")) == ["taken-id"]
