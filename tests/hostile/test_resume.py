"""Hostile run folders given to a resume (docs/spec.md#58-checkpoints-and-resume): a
checkpoint that is torn, garbage, of the old pickled format, or that no longer matches its
run's config, and a config that no longer loads. Each is refused before anything is
written, with a reason naming the file at fault; the run stays as it was (failed,
resumable once fixed), and no pickle is ever loaded.

The checks run in :func:`sga_core.runs.launch.request_resume` (what ``train --resume``
and the Resume button call), which needs no torch; the trainer's own checks are in
tests/e2e/test_resume.py.
"""

from __future__ import annotations

import json
import pickle
import struct

import pytest

from sga_core.runs import checkpoints as ckpts
from sga_core.runs import launch
from sga_core.runs import status as run_status
from tests.helpers.resume import checkpointed_run, copy_run, snapshot

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stopped(tmp_path_factory, tiny_model_dir, demo_dir):
    return checkpointed_run(tmp_path_factory.mktemp("stopped"), tiny_model_dir, demo_dir)


@pytest.fixture
def run(stopped, tmp_path):
    return copy_run(stopped, tmp_path)


def newest(run_dir):
    return ckpts.latest(run_dir)[1]


def edit_json(path, **changes):
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def edit_config(run_dir, change):
    import yaml

    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
    change(cfg)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg))


class Boom:
    """A pickle that, loaded, creates a file (the marker)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def safetensors_bytes(header: dict, data: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


# every damage: (what to do to the run folder, words the refusal must contain)
def torn_info(r):
    (newest(r) / "checkpoint.json").write_text('{"format": 2, "step": 4, "num_')


def info_not_object(r):
    (newest(r) / "checkpoint.json").write_text("[4]")


def processes_as_text(r):
    edit_json(newest(r) / "checkpoint.json", num_processes="1")


def processes_zero(r):
    edit_json(newest(r) / "checkpoint.json", num_processes=0)


def info_step_differs(r):
    edit_json(newest(r) / "checkpoint.json", step=2)


def folder_renamed(r):
    """The folder says step 5, checkpoint.json agrees, the trainer's position is 4."""
    old = newest(r)
    edit_json(old / "checkpoint.json", step=5)
    old.rename(old.with_name(ckpts.checkpoint_name(5)))


def position_differs(r):
    edit_json(newest(r) / "trainer.json", step=3)


def trainer_missing(r):
    (newest(r) / "trainer.json").unlink()


def trainer_torn(r):
    (newest(r) / "trainer.json").write_text('{"step": 4, "sched')


def scheduler_garbage(r):
    edit_json(newest(r) / "trainer.json", scheduler="x")


def rng_missing(r):
    (newest(r) / ckpts.rng_file(0)).unlink()


def rng_garbage(r):
    (newest(r) / ckpts.rng_file(0)).write_bytes(b"\x00garbage" * 10)


def rng_without_torch(r):
    (newest(r) / ckpts.rng_file(0)).write_bytes(safetensors_bytes({
        "python": {"dtype": "I64", "shape": [0], "data_offsets": [0, 0]},
        "numpy": {"dtype": "I64", "shape": [0], "data_offsets": [0, 0]}}))


def model_truncated(r):
    path = newest(r) / ckpts.MODEL_FILE
    data = path.read_bytes()
    path.write_bytes(data[:8 + struct.unpack("<Q", data[:8])[0] + 10])  # header kept


def model_huge_header(r):
    (newest(r) / ckpts.MODEL_FILE).write_bytes(struct.pack("<Q", 2**62) + b"{}")


def optimizer_missing(r):
    (newest(r) / ckpts.OPTIMIZER_FILE).unlink()


def old_format(r):
    """A checkpoint of the old format: its states pickled (one of them hostile)."""
    folder = newest(r)
    edit_json(folder / "checkpoint.json", format=None)
    (folder / "custom_checkpoint_1.pkl").write_bytes(pickle.dumps(Boom(r / "PWNED")))


def method_changed(r):
    edit_config(r, lambda c: c.update(method="ga", method_args={}))


def method_args_changed(r):
    edit_config(r, lambda c: c["method_args"].update(r=0.4))


def batch_changed(r):
    edit_config(r, lambda c: c["training"].update(batch_size=2))


def seed_changed(r):
    edit_config(r, lambda c: c["training"].update(seed=8))


def lora_changed(r):
    edit_config(r, lambda c: c["training"].update(lora_rank=4))


def max_steps_below(r):
    edit_config(r, lambda c: c["training"].update(max_steps=3))


def data_changed(r):
    path = r / "data" / "forget.jsonl"
    rows = path.read_text().splitlines()
    path.write_text("\n".join(rows[1:] + rows[:1]).replace("?", "??", 1) + "\n")


def config_broken(r):
    (r / "config.yaml").write_text("training: [unclosed\n")


def config_invalid(r):
    edit_config(r, lambda c: c["training"].update(batch_size=-3))


def tensorboard_is_a_file(r):
    edit_config(r, lambda c: c["training"].update(report_to=["tensorboard"]))
    (r / "tensorboard").write_text("not a folder")


DAMAGE = {
    torn_info: ("checkpoint.json", "not valid JSON"),
    info_not_object: ("checkpoint.json", "object"),
    processes_as_text: ("checkpoint.json", "num_processes"),
    processes_zero: ("checkpoint.json", "num_processes"),
    info_step_differs: ("checkpoint.json", "step"),
    folder_renamed: ("trainer.json", "position"),
    position_differs: ("trainer.json", "position"),
    trainer_missing: ("trainer.json", "missing"),
    trainer_torn: ("trainer.json", "not valid JSON"),
    scheduler_garbage: ("trainer.json", "scheduler"),
    rng_missing: ("random_states_0.safetensors", "missing"),
    rng_garbage: ("random_states_0.safetensors", "not a safetensors file"),
    rng_without_torch: ("random_states_0.safetensors", "torch"),
    model_truncated: ("model.safetensors", "outside the file"),
    model_huge_header: ("model.safetensors", "not a safetensors file"),
    optimizer_missing: ("optimizer.safetensors", "missing"),
    old_format: ("custom_checkpoint_1.pkl", "pickle"),
    method_changed: ("checkpoint.json", "method"),
    method_args_changed: ("checkpoint.json", "method_args"),
    batch_changed: ("checkpoint.json", "batch_size"),
    seed_changed: ("checkpoint.json", "seed"),
    lora_changed: ("checkpoint.json", "lora"),
    max_steps_below: ("max_steps", "below the checkpoint's step 4"),
    data_changed: ("data snapshot", "forget"),
    config_broken: ("config.yaml", ""),
    config_invalid: ("config.yaml", "batch_size"),
    tensorboard_is_a_file: ("tensorboard", "is a file"),
}


@pytest.mark.parametrize("damage", list(DAMAGE), ids=lambda f: f.__name__)
def test_a_damaged_or_changed_run_is_refused_and_left_as_it_was(run, damage):
    damage(run)
    before = snapshot(run)
    with pytest.raises(ValueError) as err:
        launch.request_resume(run, "foreground")
    where, words = DAMAGE[damage]
    msg = str(err.value)
    assert where in msg and words in msg, msg
    assert run.name in msg or "checkpoint" in msg, msg
    assert "1 processes" not in msg
    assert type(err.value) is not json.JSONDecodeError
    # nothing changed: still failed (so resumable once fixed), no file touched
    assert snapshot(run) == before
    assert run_status.effective_run(run)["state"] == "failed"
    assert not (run / "PWNED").exists()


def test_another_process_count_is_named_in_words(run):
    edit_json(newest(run) / "checkpoint.json", num_processes=2)
    with pytest.raises(ValueError) as err:
        launch.request_resume(run, "foreground")
    msg = str(err.value)
    assert "saved by 2 processes" in msg and "this run has 1 process)" in msg, msg


def test_a_fixed_config_can_then_be_resumed(run):
    good = (run / "config.yaml").read_text()
    config_broken(run)
    with pytest.raises(ValueError):
        launch.request_resume(run, "foreground")
    (run / "config.yaml").write_text(good)
    st = launch.request_resume(run, "foreground")
    assert st["state"] == "queued" and st["resume"] is True
