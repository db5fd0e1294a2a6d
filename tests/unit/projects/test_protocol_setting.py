"""The evaluation protocol is a project setting: chosen at creation or later (library, CLI),
read by the project's new runs, and a change offers to re-evaluate the runs evaluated under
another protocol, queued through the re-evaluation path with the protocol carried along."""

from __future__ import annotations

import pytest

from sga_core.assets import DEMO_DIR
from sga_core.cli import main
from sga_core.projects import ProjectError, create_project, load_project
from sga_core.projects.training import default_eval
from tests.helpers.own_data import fake_run, metrics


def test_create_with_a_protocol_and_change_it(tmp_path):
    p = create_project("n", DEMO_DIR / "text_forget.jsonl", root=tmp_path, protocol="muse")
    assert p.protocol == "muse" and default_eval(p, tmp_path / "runs")["protocol"] == "muse"
    assert p.set_protocol("copyright") == "copyright"
    assert load_project("n", tmp_path).protocol == "copyright"
    with pytest.raises(ProjectError, match="known: demo, tofu, muse, copyright"):
        p.set_protocol("nope")
    plain = create_project("d", DEMO_DIR / "text_forget.jsonl", root=tmp_path)
    assert plain.protocol == "demo"


def test_cli_protocol_flags_and_reevaluation(tmp_path, monkeypatch, capsys):
    from sga_core.runs.launch import eval_argv
    from sga_core.runs.listing import eval_request_protocol

    ws, runs = tmp_path / "ws", tmp_path / "runs"
    monkeypatch.setenv("SGA_RUNS_DIR", str(runs))
    monkeypatch.setattr("sga_core.runs.queue.ensure_runner", lambda root: None)
    rc = main(["project", "create", "qa", "--workspace", str(ws), "--forget",
               str(DEMO_DIR / "forget.jsonl"), "--retain", str(DEMO_DIR / "retain.jsonl"),
               "--protocol", "tofu"])
    out = capsys.readouterr().out
    assert rc == 0 and "evaluation protocol: TOFU protocol: follows" in out
    project = load_project("qa", ws)
    assert project.protocol == "tofu"
    run = fake_run(runs, project, "sga-a", metrics=metrics())  # evaluated under demo
    rc = main(["project", "set-protocol", "qa", "--workspace", str(ws), "--protocol", "muse"])
    out = capsys.readouterr().out
    assert rc == 0 and "1 evaluated run under another protocol than muse: sga-a (demo)" in out
    assert eval_request_protocol(run) is None  # only offered
    rc = main(["project", "show", "qa", "--workspace", str(ws), "--reevaluate"])
    out = capsys.readouterr().out
    assert rc == 0 and "queued the evaluation of 1 run under muse: sga-a (demo)" in out
    assert eval_request_protocol(run) == "muse"
    assert eval_argv(run, {}, eval_request_protocol(run))[-2:] == ["--protocol", "muse"]
    rc = main(["project", "set-protocol", "qa", "--workspace", str(ws)])
    assert rc == 2 and "--protocol" in capsys.readouterr().err
