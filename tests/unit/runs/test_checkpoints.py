"""A run's checkpoint folders (sga_core.runs.checkpoints): which count, pruning, and cutting
the step logs back to a checkpoint's step."""

from __future__ import annotations

from sga_core.fileio import append_jsonl, atomic_write_json, read_jsonl
from sga_core.runs import checkpoints as ckpts
from sga_core.runs.folder import CHECKPOINT_INFO
from sga_core.runs.leftovers import leftover_kind


def _checkpoint(run_dir, step: int, complete: bool = True):
    folder = ckpts.checkpoints_dir(run_dir) / ckpts.checkpoint_name(step)
    folder.mkdir(parents=True)
    if complete:
        atomic_write_json(folder / CHECKPOINT_INFO, {"step": step})
    return folder


def test_only_complete_checkpoints_count_and_the_newest_is_latest(tmp_path):
    assert ckpts.latest(tmp_path) is None
    _checkpoint(tmp_path, 5)
    _checkpoint(tmp_path, 10)
    _checkpoint(tmp_path, 15, complete=False)  # no info file: never finished
    (ckpts.checkpoints_dir(tmp_path) / ckpts.temp_name(20)).mkdir()  # a save cut short
    assert [s for s, _ in ckpts.checkpoints(tmp_path)] == [5, 10]
    assert ckpts.latest(tmp_path)[0] == 10
    # the temporary name is one that leftover clean-up knows
    assert leftover_kind(ckpts.temp_name(20)) == "tmp"


def test_prune_keeps_the_newest_and_removes_cut_short_saves(tmp_path):
    for step in (2, 4, 6, 8):
        _checkpoint(tmp_path, step)
    torn = ckpts.checkpoints_dir(tmp_path) / ckpts.temp_name(10)
    torn.mkdir()
    ckpts.prune(tmp_path, keep=2)
    assert [s for s, _ in ckpts.checkpoints(tmp_path)] == [6, 8]
    assert not torn.exists()


def test_resumable_needs_a_resumable_state_and_a_checkpoint(tmp_path):
    assert not ckpts.resumable(tmp_path, {"state": "failed"})
    _checkpoint(tmp_path, 3)
    for state in ("failed", "cancelled"):
        assert ckpts.resumable(tmp_path, {"state": state})
        assert ckpts.resume_offer(tmp_path, {"state": state}) == "the checkpoint at step 3"
    for state in ("completed", "running", "queued", "diverged", "timed_out", None):
        assert not ckpts.resumable(tmp_path, {"state": state})
        assert ckpts.resume_offer(tmp_path, {"state": state}) is None


def test_truncate_log_keeps_one_line_per_step_up_to_the_checkpoint(tmp_path):
    path = tmp_path / "metrics.jsonl"
    for step in range(1, 14):
        append_jsonl(path, {"step": step, "loss": float(step)})
    with open(path, "a") as fh:
        fh.write('{"step": 14, "lo')  # a line torn by the kill
    assert ckpts.truncate_log(path, 10) == 3
    assert [r["step"] for r in read_jsonl(path)] == list(range(1, 11))
    assert ckpts.truncate_log(tmp_path / "none.jsonl", 10) == 0
    assert ckpts.truncate_log(path, -1) == 10 and read_jsonl(path) == []


def test_every_resumable_state_is_a_state_a_run_can_have(tmp_path):
    """A state offered for resume is one status.json may hold (not shown as damaged), and
    a run SLURM stopped at its time limit gets one of them."""
    from sga_core.runs import status as run_status
    from sga_core.runs.slurm.states import ENDED

    _checkpoint(tmp_path, 3)
    for state in ckpts.RESUMABLE_STATES:
        run_status.write_run(tmp_path, state)
        shown = run_status.effective_run(tmp_path)
        assert shown["state"] == state, shown
        assert ckpts.resume_offer(tmp_path, shown) == "the checkpoint at step 3"
    assert ENDED["TIMEOUT"][0] in ckpts.RESUMABLE_STATES
