"""MUSE's sustainability study end to end: the fixture MUSE-News with its scal / sust splits
imported, a 2-request study run by `python -m sga_core sustain` on a tiny model (2 steps a
request), each request's run starting from the last run's model and evaluated after it, and
the curve's points printed by `sustain --show`."""

from __future__ import annotations

import json

import torch
from safetensors.torch import load_file

from sga_core.cli import main
from sga_core.projects import load_project
from sga_core.projects.study import list_studies
from sga_core.report.study import study_curve
from sga_core.runs.folder import RunFolder
from sga_core.runs.status import read_run
from tests.helpers.cli import sga_cli
from tests.helpers.hostile_corpus import write_folder
from tests.helpers.muse_files import published_files, study_files, sust_fold


def weights(model_dir) -> dict[str, torch.Tensor]:
    out = {}
    for f in sorted(model_dir.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out


def distance(a: dict, b: dict) -> float:
    return sum(float((a[k].float() - b[k].float()).pow(2).sum()) for k in a) ** 0.5


def two_request_study(ws, runs, tmp_path, tiny_model_dir, backend: str):
    """The fixture MUSE-News imported with its study splits into ``ws``, and a 2-request
    sustainability study ``chain`` of GA (2 steps a request) sent to ``backend``; the two
    requests' run folders."""
    folder = write_folder(tmp_path / "news", {**published_files(), **study_files()})
    assert main(["import", "muse-news", "--from-folder", str(folder), "--study-splits",
                 "--workspace", str(ws)]) == 0
    sent = sga_cli("sustain", "--project", "muse-news", "--workspace", str(ws), "--runs-dir",
                   str(runs), "--model", str(tiny_model_dir), "--method", "ga",
                   "--name", "chain", "--requests", "2", "--max-steps", "2",
                   "--batch-size", "2", "--lr", "1e-3", "--device", "cpu", "--max-rows", "2",
                   "--backend", backend, timeout=600)
    assert sent.returncode == 0, sent.stdout[-3000:] + sent.stderr[-3000:]
    return RunFolder(runs / "chain-r1"), RunFolder(runs / "chain-r2")


def test_a_two_request_sustainability_study(tmp_path, tiny_model_dir, capsys):
    ws, runs = tmp_path / "ws", tmp_path / "runs"
    r1, r2 = two_request_study(ws, runs, tmp_path, tiny_model_dir, "local")
    # each request trains on its own fold ...
    for run, k in ((r1, 1), (r2, 2)):
        snapshot = run.data_dir / "forget.jsonl"
        assert [json.loads(x)["text"] for x in snapshot.read_text().splitlines()] == \
            sust_fold(k)
        assert read_run(run.path)["state"] == "completed"
        assert run.summary() is not None  # evaluated after its request
    # ... request 2 from request 1's model, after request 1 ended with it
    assert r1.config().model == str(tiny_model_dir)
    assert r2.config().model == str(r1.model_dir)
    assert read_run(r2.path)["started_at"] >= read_run(r1.path)["ended_at"]
    w0, w1, w2 = weights(tiny_model_dir), weights(r1.model_dir), weights(r2.model_dir)
    assert distance(w1, w0) > 0 and distance(w2, w1) > 0
    # request 2's 2 steps moved it from request 1's weights, not from the Original's
    assert distance(w2, w1) < distance(w2, w0), "request 2 did not start from request 1"
    # the curve: one point per request, MUSE's metrics
    project = load_project("muse-news", ws)
    (study,) = list_studies(project)
    assert (study.mode, study.parts, study.runs) == (
        "sustain", ["sust/forget_1", "sust/forget_2"], ["chain-r1", "chain-r2"])
    curve = study_curve(study, runs)
    assert [p["request"] for p in curve["points"]] == [1, 2]
    assert curve["metrics"] == ["forget_knowmem", "forget_verbmem", "retain_knowmem"]
    for p in curve["points"]:
        assert set(curve["metrics"]) <= set(p["values"]) and p["why"] is None
    shown = sga_cli("sustain", "--project", "muse-news", "--workspace", str(ws),
                    "--runs-dir", str(runs), "--show", "chain")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[1].split()[:5] == ["request", "forget", "part", "run", "state"]
    assert lines[2].split()[:4] == ["1", "sust/forget_1", "chain-r1", "completed"]
    assert lines[3].split()[:4] == ["2", "sust/forget_2", "chain-r2", "completed"]
    value = curve["points"][1]["values"]["forget_verbmem"]
    assert f"{value:.4g}" in lines[3]
