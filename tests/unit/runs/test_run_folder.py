"""RunFolder (sga_core.runs.folder): the one owner of a run folder's paths and readers. Each
reader on a real run folder made by the library's own writers (create_run, status writes,
appended logs, an evaluation's files), and on the same folder damaged: the reader raises
the checked readers' Damaged naming the file, as the listing reports it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sga_core.config import ConfigError, TrainConfig
from sga_core.fileio import append_jsonl, atomic_write_json, atomic_write_jsonl
from sga_core.runs import status as run_status
from sga_core.runs.create import create_run
from sga_core.runs.damage import damage
from sga_core.runs.folder import NAMES, RunFolder, request_cancel
from sga_core.runs.listing import list_runs
from sga_core.runs.validate import Damaged


@pytest.fixture()
def run(tmp_path) -> RunFolder:
    """A run folder made by create_run (config, command, status, data snapshot)."""
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.projects.training import build_config

    project = create_demo_project(root=tmp_path / "ws")
    project.save_normals(idk_normals(10, 4), "seed")
    cfg = build_config(project, method="sga", method_args={"r": -0.8, "k": 4},
                       training={"max_steps": 3, "probe_rows": [0]}, launch={},
                       model="embedded:smollm2", normals=str(project.normals_path),
                       run_id="a")
    return RunFolder(create_run(cfg, tmp_path / "runs"))


def trained(run: RunFolder, steps: int = 3) -> None:
    """What the trainer leaves: metrics and probes per step, its evaluation during training,
    then the final status."""
    for step in range(1, steps + 1):
        append_jsonl(run.metrics_path, {"step": step, "loss": -1.0 * step})
        append_jsonl(run.probes_path, {"step": step, "forget_index": 0, "tokens": ["a"],
                                       "probs": [0.5]})
        append_jsonl(run.eval_steps_path, {"step": step, "best": False})
    run_status.write_run(run.path, "completed", step=steps, total_steps=steps)


def evaluated(run: RunFolder, n_forget: int = 2) -> None:
    """What an evaluation leaves: per-row records and token tables, then the summary."""
    rows = [{"set": "forget", "index": i, "question": f"q{i}", "probability": 0.5}
            for i in range(n_forget)]
    atomic_write_jsonl(run.per_sample_path, rows)
    atomic_write_jsonl(run.tokens_path, [{"set": "forget", "index": i, "tokens": ["a"],
                                          "probs": [0.5]} for i in range(n_forget)])
    atomic_write_jsonl(run.layers_path, [LAYER_ROW | {"index": i} for i in range(n_forget)])
    atomic_write_json(run.summary_path, {
        "task": "qa", "rows": {"forget": n_forget},
        "metrics": {"forget_probability": {"value": 0.5, "reason": None}}})
    run_status.write_eval(run.path, "completed")


#: a layer-table row of a two-block model and a two-token answer
LAYER_ROW = {"set": "forget", "tokens": [" F", "rench"], "token_ids": [5, 6], "lens": "logit",
             "probs": [[0.9, 0.8], [0.1, 0.7]], "ranks": [[1, 1], [40, 1]],
             "top1": [[" F", "rench"], [" E", "rench"]]}


def test_paths_are_inside_the_run_folder_and_named_once(run):
    assert run.run_id == "a" and run.exists()
    assert RunFolder.of("a", run.path.parent) == run
    for attr in ("config_path", "command_path", "status_path", "data_dir", "manifest_path"):
        assert getattr(run, attr).exists(), attr  # what create_run writes
    assert run.summary_path.parent == run.eval_dir == run.eval_status_path.parent
    assert run.per_sample_path.parent == run.tokens_path.parent == run.eval_dir
    assert run.manifest_path.parent == run.data_dir
    assert {p.name for p in run.path.iterdir()} <= set(NAMES)


def test_of_refuses_a_path_for_a_run_id(tmp_path):
    with pytest.raises(ConfigError, match="lowercase letters, digits and '-' only"):
        RunFolder.of("../elsewhere", tmp_path)


def test_readers_of_a_new_run(run):
    """A queued run: its config and status; the files not written yet read empty."""
    assert isinstance(run.config(), TrainConfig) and run.config().run_id == "a"
    assert run.config_dict()["method"] == "sga"
    assert run.config_sections()["method_args"]["r"] == -0.8
    assert run.status()["state"] == "queued" and run.read_status()["mode"] == "foreground"
    assert run.eval_status() == {} and run.read_eval_status() == {}
    assert set(run.manifest()) == {"forget", "retain", "normals"}
    assert run.metrics() == run.probes() == run.eval_steps() == []
    assert run.summary() is None and run.per_sample() == [] and run.tokens() == []
    assert run.layers() == []
    assert run.train_log() == "" and run.eval_log() == ""
    assert not run.has_model() and not run.cancel_requested() and not run.eval_requested()
    assert run.eval_request_sets() == {} and damage(run.path) == []


def test_readers_of_a_trained_and_evaluated_run(run):
    trained(run)
    evaluated(run)
    run.train_log_path.write_text("step 1\nstep 2\nstep 3\n")
    assert [r["step"] for r in run.metrics()] == [1, 2, 3]
    assert [r["step"] for r in run.probes()] == [1, 2, 3]
    assert [r["step"] for r in run.eval_steps()] == [1, 2, 3]
    assert run.status()["state"] == "completed" and run.eval_status()["state"] == "completed"
    assert run.summary()["rows"] == {"forget": 2}
    assert len(run.per_sample()) == 2 and len(run.tokens()) == 2
    assert [r["ranks"] for r in run.layers()] == [LAYER_ROW["ranks"]] * 2
    assert run.train_log(2) == "step 2\nstep 3"
    assert damage(run.path) == [] and list_runs(run.path.parent)[0]["damaged"] is None


def test_markers(run):
    request_cancel(run.path)
    assert run.cancel_requested()
    atomic_write_json(run.eval_request_path, {"sets": {"extra": "/data/x.jsonl"}})
    assert run.eval_requested() and run.eval_request_sets() == {"extra": "/data/x.jsonl"}


def damage_metrics(run):
    run.metrics_path.write_text(run.metrics_path.read_text().splitlines()[0] + "\n")


def damage_summary(run):
    run.summary_path.write_text('{"metrics": 5}')


def damage_per_sample(run):
    run.per_sample_path.write_text(run.per_sample_path.read_text().splitlines()[0] + "\n")


def damage_tokens(run):
    run.tokens_path.write_text("not json\n")


def layers_of(run, change) -> None:
    atomic_write_jsonl(run.layers_path, [change(LAYER_ROW | {"index": i}) for i in range(2)])


def damage_layers_cut(run):
    run.layers_path.write_text(run.layers_path.read_text().splitlines()[0] + "\n")


def damage_layers_width(run):  # a layer with one value for two tokens
    layers_of(run, lambda r: r | {"probs": [[0.9, 0.8], [0.1]]})


def damage_layers_depth(run):  # rows read at different depths
    layers_of(run, lambda r: r | ({"ranks": [[1, 1]]} if r["index"] else {}))


def damage_layers_rank(run):
    layers_of(run, lambda r: r | {"ranks": [[0, 1], [40, 1]]})


def damage_probes(run):
    run.probes_path.write_text('{"step": "one"}\n')


def damage_eval_steps(run):
    run.eval_steps_path.write_text('{"step": -1}\n')


def damage_manifest(run):
    run.manifest_path.write_text("[]")


def damage_config(run):
    run.config_path.write_text("method: [unclosed\n")


@pytest.mark.parametrize("harm, reader, file, words", [
    (damage_metrics, "metrics", "metrics.jsonl", "ends at step 1"),
    (damage_summary, "summary", "eval/summary.json", "metrics must be an object"),
    (damage_per_sample, "per_sample", "eval/per_sample.jsonl", "evaluated rows are missing"),
    (damage_tokens, "tokens", "eval/tokens.jsonl", "line 1 is not a JSON record"),
    (damage_probes, "probes", "probes.jsonl", "line 1"),
    (damage_layers_cut, "layers", "eval/layers.jsonl", "1 evaluated rows are missing"),
    (damage_layers_width, "layers", "eval/layers.jsonl", "probs of layer 2 has 1 values for 2"),
    (damage_layers_depth, "layers", "eval/layers.jsonl", "ranks has 1 layers, other rows 2"),
    (damage_layers_rank, "layers", "eval/layers.jsonl", "line 1: ranks item 0 item 0 must"),
    (damage_eval_steps, "eval_steps", "eval_steps.jsonl", "line 1"),
    (damage_manifest, "manifest", "data/manifest.json", "must hold a JSON object"),
    (damage_config, "config_dict", "config.yaml", "is not valid YAML"),
])
def test_a_damaged_file_names_itself(run, harm, reader, file, words):
    trained(run)
    evaluated(run)
    harm(run)
    with pytest.raises(Damaged) as exc:
        getattr(run, reader)()
    assert exc.value.file == file and words in str(exc.value), str(exc.value)
    assert [d.file for d in damage(run.path)] == [file]  # the listing says the same


def test_a_damaged_status_is_shown_damaged_never_raised(run):
    run.status_path.write_text('{"state": "running", "pid": "abc"}')
    assert run.status()["state"] == "damaged"
    assert run.read_status()["damaged"].startswith("status.json: ")
    assert run_status.effective_run(run.path) == run.status()  # the old reader agrees
    run.eval_dir.mkdir(exist_ok=True)
    run.eval_status_path.write_text("{")
    assert run.eval_status()["damaged"].startswith("eval/status.json: ")
    assert {d.file for d in damage(run.path)} == {"status.json", "eval/status.json"}


def test_config_reader_gives_the_config_error(run):
    run.config_path.write_text(json.dumps({"method": "sga", "training": {"lr": "fast"}}))
    with pytest.raises(ConfigError):
        run.config()


def test_a_vanished_runner_shows_failed(run):
    """status() is the effective status: a running record whose processes are gone."""
    run_status.write_run(run.path, "running", pid=2**22 - 1)
    assert run.read_status()["state"] == "running"
    assert run.status()["state"] == "failed" and run.status()["vanished"]


def test_equal_by_path(tmp_path):
    assert RunFolder(tmp_path / "x") == RunFolder(Path(str(tmp_path / "x")))
    assert len({RunFolder(tmp_path / "x"), RunFolder(tmp_path / "x")}) == 1
    assert "x" in repr(RunFolder(tmp_path / "x"))
