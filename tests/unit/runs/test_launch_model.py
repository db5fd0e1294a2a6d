"""The model a launch names is checked before any run folder is made
(sga_core.runs.create.check_model): a folder that does not exist, or holds no model, is
refused with the spec and the reason, from the Train page's preview and launch and the
CLI alike, instead of a queued run that fails later with ModelError. A run's model still to
come (Prepare queued) and hub ids are accepted."""

from __future__ import annotations

import pytest

from sga_core.cli import main
from sga_core.config import TrainConfig
from sga_core.params import ConfigError
from sga_core.runs import status as run_status
from sga_core.runs.create import check_model, create_run
from sga_core.runs.queue import preview


def _cfg(demo_dir, model: str) -> TrainConfig:
    c = TrainConfig(model=model, method="ga")
    c.data.forget = str(demo_dir / "forget.jsonl")
    return c


@pytest.mark.parametrize("spec, why", [
    ("/nowhere/model", "the folder /nowhere/model does not exist"),
    ("./not-here", "the folder ./not-here does not exist"),
    ("runs/x/model", "the folder runs/x/model does not exist"),
    ("embedded:gpt5", "'embedded:gpt5' is no embedded model; known: embedded:smollm2"),
    ("bad id!", "'bad id!' is neither a folder on this machine nor a hub id"),
    ("  ", "give a hub id"),
])
def test_a_model_that_cannot_be_found_is_refused_before_any_folder(spec, why, tmp_path,
                                                                    demo_dir):
    runs = tmp_path / "runs"
    with pytest.raises(ConfigError) as got:
        create_run(_cfg(demo_dir, spec), runs)
    assert str(got.value).startswith("model: ") and why in str(got.value)
    assert not runs.exists() or list(runs.iterdir()) == []  # nothing half made
    with pytest.raises(ConfigError, match="model: "):  # the Train page's preview says it too
        preview(_cfg(demo_dir, spec), runs)


def test_a_folder_without_a_model_is_refused(tmp_path, demo_dir):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"model: the folder .*empty holds no model"):
        check_model(_cfg(demo_dir, str(empty)))


def test_models_that_exist_or_are_still_to_come_are_accepted(tmp_path, demo_dir, tiny_model_dir):
    runs = tmp_path / "runs"
    for spec in ("embedded:smollm2", str(tiny_model_dir), "org/name", "gpt2"):
        check_model(_cfg(demo_dir, spec))
    # Prepare's Original still queued: a run on its model waits for it (runs.upstream)
    prep = runs / "demo-original"
    prep.mkdir(parents=True)
    run_status.write_run(prep, "queued", run_id=prep.name)
    check_model(_cfg(demo_dir, str(prep / "model")))
    run_status.write_run(prep, "cancelled", run_id=prep.name)  # ended without its model
    with pytest.raises(ConfigError, match="run demo-original has no model \\(cancelled"):
        check_model(_cfg(demo_dir, str(prep / "model")))


def test_the_cli_refuses_a_missing_model_folder(tmp_path, demo_dir, capsys):
    runs = tmp_path / "runs"
    code = main(["train", "--method", "ga", "--forget", str(demo_dir / "forget.jsonl"),
                 "--model", str(tmp_path / "gone"), "--runs-dir", str(runs), "--queue"])
    assert code == 2
    err = capsys.readouterr().err
    assert f"model: the folder {tmp_path / 'gone'} does not exist" in err
    assert not runs.exists() or not [p for p in runs.iterdir() if (p / "status.json").exists()]
