"""Hostile published-model settings (sga_core/projects/published.py): each bad checkpoint
or eval log is refused with a message naming the role and what is wrong (never a
traceback), and the project's settings stay as they were."""

from __future__ import annotations

import pytest

from sga_core.assets import DEMO_DIR
from sga_core.projects import ProjectError, create_project
from sga_core.projects.published import named, set_published

BAD_LOGS = {
    "binary.json": (b"\xff\xfe\x00binary", "is not UTF-8 text"),
    "list.json": (b"[1, 2]", "must hold an object of metrics, got list"),
    "keys.json": (b'{"forget_truth_ratio": {"agg_value": 1, "value_by_index": {"a": '
                  b'{"score": 1}}}}', "row index 'a' is not a number"),
    "deep.json": (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    "other.json": (b'{"accuracy": 0.5}', "not an open-unlearning eval log"),
    "noscore.json": (b'{"forget_truth_ratio": {"agg_value": 1, "value_by_index": {}}}',
                     "value_by_index must be a non-empty object of rows"),
}


def test_bad_settings_are_refused_and_change_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    p = create_project("h", DEMO_DIR / "forget.jsonl", root=tmp_path / "ws")
    for name, (content, why) in BAD_LOGS.items():
        f = tmp_path / name
        f.write_bytes(content)
        with pytest.raises(ProjectError, match=why):
            set_published(p, reference_logs=str(f))
    (tmp_path / "empty").mkdir()
    cases = {"reference_logs": [(str(tmp_path / "empty"), "holds no open-unlearning eval "
                                 "log"), (str(tmp_path / "none.json"), "does not exist"),
                                ("x" * 300 + "/y", "too long")],
             "original": [(str(DEMO_DIR / "forget.jsonl"), "is not a folder"),
                          (str(DEMO_DIR), "config.json is missing"),
                          ("a/b/c", "neither a folder on this machine nor a hub id"),
                          ("x" * 300 + "/y", "too long"),
                          ("embedded:smollm2", "the base model")],
             "retained": [("org/name", "not in the local Hugging Face cache")]}
    for role, bad in cases.items():
        for value, why in bad:
            with pytest.raises(ProjectError, match=why):
                set_published(p, **{role: value})
    assert named(p) == {}


def _model_folder(folder):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    (folder / "model.safetensors").write_bytes(b"w")
    (folder / "tokenizer.json").write_text("{}")
    return folder


def test_one_model_as_original_and_retained_is_refused(tmp_path):
    """Forget Quality would compare the model with itself: refused, whichever role is
    named first, and nothing changes."""
    p = create_project("h", DEMO_DIR / "forget.jsonl", root=tmp_path / "ws")
    full = _model_folder(tmp_path / "full")
    why = "the Original and the Retained model are the same model"
    with pytest.raises(ProjectError, match=why):
        set_published(p, original=str(full), retained=str(full))
    assert named(p) == {}
    set_published(p, original=str(full))
    with pytest.raises(ProjectError, match=why):  # the same folder, by another path
        set_published(p, retained=str(tmp_path / "." / "full"))
    assert named(p) == {"original": str(full.resolve())}


def test_a_run_s_model_is_accepted_with_a_note(tmp_path):
    """A folder that is another run's model (here Prepare's Original of the demo, reached
    through a link) serves, and the Data page's lines say whose it is and that it changes
    with that run."""
    from sga_core.projects.published import in_use_lines
    from sga_core.runs import status as run_status

    p = create_project("h", DEMO_DIR / "forget.jsonl", root=tmp_path / "ws")
    run = tmp_path / "runs" / "demo-original"
    _model_folder(run / "model")
    run_status.write_run(run, "completed", run_id=run.name)
    (tmp_path / "link").symlink_to(run / "model")
    set_published(p, original=str(tmp_path / "link"))
    lines = in_use_lines(p, tmp_path / "runs")
    assert lines[0] == (f"Original: published checkpoint (folder): {run / 'model'} - note: the "
                        "model of run demo-original: preparing or re-running that run "
                        "replaces it, deleting it removes it"), lines
    other = _model_folder(tmp_path / "retain90")
    set_published(p, retained=str(other))
    assert "note" not in " ".join(in_use_lines(p, tmp_path / "runs")[1:])


@pytest.mark.slow
def test_an_evaluation_command_in_a_hostile_runs_folder_evaluates_that_folder(
        tmp_path, tiny_model_dir):
    """A runs folder whose path holds a space, quotes and ``$(...)``: the published model's
    evaluation folder's ``command.sh`` names it as one word, and running it evaluates that
    folder and runs nothing else."""
    import os
    import shlex
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from sga_core.projects.published_eval import evaluate_published
    from sga_core.runs import status as run_status
    from tests.helpers.stress import runner_lock

    p = create_project("h", DEMO_DIR / "forget.jsonl", DEMO_DIR / "retain.jsonl",
                       root=tmp_path / "ws")
    set_published(p, original=str(tiny_model_dir),
                  retained=str(shutil.copytree(tiny_model_dir, tmp_path / "retained")))
    runs = tmp_path / "runs $(touch PWNED) 'q\" `id`"
    with runner_lock(runs):  # held: the command below is what evaluates
        ret, orig = evaluate_published(p, runs, max_rows=2)
    command = (orig / "command.sh").read_text()
    assert shlex.split(command.strip().splitlines()[-1]) == \
        ["python", "-m", "sga_core", "eval", str(orig)]
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "PYTHONPATH": str(root)}
    out = subprocess.run(["bash", str(orig / "command.sh")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert run_status.read_eval(orig)["state"] == "completed"
    assert (orig / "eval" / "summary.json").is_file()
    assert not list(tmp_path.rglob("PWNED")) and not list(root.glob("PWNED"))
