"""What a real one-node SLURM cluster makes of awkward runs folders and profiles: a runs
folder whose path has spaces and ``%`` works (the job's
``slurm.log`` lands in the run folder, not at a pattern sbatch expanded), and a profile
asking for more CPUs than any node has is refused naming the setting and what the nodes
offer, before any run folder exists."""

from __future__ import annotations

import pytest

from sga_core.runs.folder import SLURM_LOG
from sga_core.runs.slurm.profile import ClusterProfile, save_profile
from tests.e2e.test_slurm_runs import make_setup, submit, wait_state
from tests.helpers.cli import sga_cli

pytestmark = pytest.mark.slow


@pytest.fixture()
def setup(tmp_path, tiny_model_dir, monkeypatch):
    return make_setup(tmp_path, tiny_model_dir, monkeypatch)


def test_a_runs_folder_with_spaces_and_percent_runs_on_slurm(slurm, setup, tmp_path):
    runs = tmp_path / "my runs %j 100%"
    train = [*setup["train"]]
    train[train.index("--runs-dir") + 1] = str(runs)
    (run_dir,) = submit({**setup, "train": train}, "--max-steps", "1", "--no-eval")
    assert run_dir.parent == runs
    st = wait_state(run_dir, ("completed", "failed", "cancelled"), 600)
    assert st["state"] == "completed", st
    log = (run_dir / SLURM_LOG).read_text()
    assert f"[job] run {run_dir.name}" in log
    # no output at a pattern sbatch expanded ("my runs 12 100..."), none in the working folder
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("my runs")) == \
        [runs.name]
    assert not list(tmp_path.glob("slurm-*.out"))


def test_more_cpus_than_any_node_has_names_the_setting_and_the_nodes(slurm, setup):
    save_profile(ClusterProfile(cpus=slurm.cpus + 1, time_limit="15"), setup["ws"])
    out = sga_cli(*setup["train"], "--max-steps", "1")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert f"cpus (CPUs per job, --cpus-per-task) is {slurm.cpus + 1}" in lines[0]
    assert f"has {slurm.cpus} CPUs" in lines[0]
    assert "Requested node configuration" not in lines[0]
    assert not setup["runs"].exists() or list(setup["runs"].iterdir()) == []


def test_a_sweep_name_with_a_space_is_refused_up_front(slurm, setup):
    """A sweep named "my sweep" (the Train page's box) is refused before sbatch is asked,
    with the rule, instead of an "Invalid directive" after the first script passed."""
    out = sga_cli(*setup["train"], "--max-steps", "1", "--seeds", "2", "--sweep", "my sweep")
    assert out.returncode == 2
    assert "sweep: 'my sweep' must be" in out.stderr and "no spaces" in out.stderr
    assert not setup["runs"].exists() or list(setup["runs"].iterdir()) == []
