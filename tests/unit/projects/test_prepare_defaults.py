"""Prepare's settings suit the task
(docs/measurability.md#what-the-prepared-models-should-reach): text passages get more
passes and longer sequences than QA answers, so the prepared Original memorises its forget
passages; both sets of settings are valid training settings."""

from __future__ import annotations

from sga_core.config import TrainingArgs
from sga_core.params import from_dict, to_dict
from sga_core.projects.prepare import PREPARE_DEFAULTS, prepare_defaults


def test_text_prepare_trains_longer_on_longer_sequences():
    qa, text = prepare_defaults("qa"), prepare_defaults("text")
    assert qa == PREPARE_DEFAULTS
    assert text["epochs"] > qa["epochs"] and text["max_length"] >= 1024
    assert text["max_length"] > TrainingArgs().max_length  # the QA default cuts at 256
    for settings in (qa, text):
        args = from_dict(TrainingArgs, settings)
        assert args.epochs == settings["epochs"]
    prepare_defaults("text")["epochs"] = 0  # a copy: the defaults stay as they are
    assert prepare_defaults("text")["epochs"] == text["epochs"]


def test_the_cli_prepare_takes_and_shows_the_browsers_defaults(tmp_path, demo_dir,
                                                                monkeypatch, capsys):
    """``prepare`` on the command line starts from ``prepare_defaults`` as the browser's
    Prepare panel does, says so in its help (not TrainingArgs' unlearning defaults, nor
    "passes over the forget set"), and limits the evaluated rows with --max-rows."""
    import pytest

    from sga_core.cli import main
    from sga_core.config import load_config
    from sga_core.projects import prepare as prep

    with pytest.raises(SystemExit):
        main(["prepare", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "Passes over the forget set" not in said
    assert "Learning rate (AdamW). (default: 0.0001)" in said
    assert "forget + retain (the original), retain only (the reference)" in said
    assert "(default: qa: 4; text: 10)" in said and "(default: qa: 8; text: 4)" in said
    assert "--max-rows N" in said

    started = []
    monkeypatch.setattr(prep, "run_foreground", lambda run_dir, echo=print: started.append(
        run_dir) or {"state": "completed"})
    for task, prefix in (("qa", ""), ("text", "text_")):
        runs = tmp_path / task
        assert main(["prepare", "--forget", str(demo_dir / f"{prefix}forget.jsonl"),
                     "--retain", str(demo_dir / f"{prefix}retain.jsonl"), "--task", task,
                     "--runs-dir", str(runs), "--max-rows", "5", "--name", "p",
                     "--backend", "local"]) == 0
        for run_id in ("p-original", "p-retain-ref"):
            cfg = load_config(runs / run_id / "config.yaml")
            assert cfg.eval.max_rows == 5
            training = to_dict(cfg.training)
            assert {k: training[k] for k in prepare_defaults(task)} == prepare_defaults(task)
    assert len(started) == 4


def test_prepare_plan_counts_steps_and_times_them_from_an_earlier_prepare(ui_env):
    """The Prepare panel's estimate: steps per model from the settings and the rows, and a
    time from the seconds a step took in this project's last (here: cancelled) prepare."""
    from sga_core.fileio import append_jsonl
    from sga_core.projects import load_project
    from sga_core.projects.prepare import prepare_steps
    from sga_core.projects.training import original_run_id, prepare_plan

    assert prepare_steps(37, 2170, prepare_defaults("text")) == {"original": 5520,
                                                                 "retain-ref": 5430}
    assert prepare_steps(37, 2170, {**prepare_defaults("text"), "max_steps": 9}) == {
        "original": 9, "retain-ref": 9}
    from sga_core.projects.demo import create_demo_project

    project = create_demo_project()  # 10 forget and 110 retain rows
    runs = ui_env / "runs"
    plan = prepare_plan(project, prepare_defaults("qa"), runs)
    assert plan["total"] == 116 and plan["step_s"] is None and plan["eta_s"] is None
    run_dir = runs / original_run_id(project)
    run_dir.mkdir(parents=True)
    for step, elapsed in ((1, 10.0), (2, 12.0), (3, 14.5), (4, 16.0)):
        append_jsonl(run_dir / "metrics.jsonl", {"step": step, "elapsed_s": elapsed,
                                                 "loss": 1.0})
    plan = prepare_plan(load_project(project.name), prepare_defaults("qa"), runs)
    assert plan["step_s"] == 2.0 and plan["eta_s"] == 232.0
