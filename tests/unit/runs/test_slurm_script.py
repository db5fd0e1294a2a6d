"""The SLURM batch script (docs/slurm.md#the-batch-script): its #SBATCH lines come from the
cluster profile, in a fixed order (a golden file), and the profile refuses what SLURM
would misread."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sga_core.assets import PROJECT_ROOT
from sga_core.params import ConfigError
from sga_core.runs.slurm.profile import (
    ClusterProfile,
    load_profile,
    profile_path,
    save_profile,
    updated,
)
from sga_core.runs.slurm.script import array_script, run_script

GOLDEN = Path(__file__).parent / "golden" / "slurm.sh"
RUN = Path("/shared/runs/sga-r-0p8-k4-20261124-080000")


def full_profile() -> ClusterProfile:
    return ClusterProfile(partition="gpu", account="lab-unlearn", qos="normal",
                          time_limit="1-02:00:00", gpus=8, gres_type="a100", cpus=32,
                          mem="256G", nodes=2, max_jobs=3,
                          extra_sbatch=["--constraint=a100", "--exclusive"],
                          setup=["module load cuda/12.1", "source /shared/venv/bin/activate"],
                          use_workbench_python=False, signal_seconds=300, requeue=True,
                          resume_after_stop=True)


def normalised(text: str) -> str:
    return text.replace(str(PROJECT_ROOT), "<PROJECT_ROOT>")


def test_batch_script_matches_the_golden_file():
    assert normalised(run_script(full_profile(), RUN)) == GOLDEN.read_text()


def test_sbatch_lines_follow_the_profile():
    lines = [ln for ln in run_script(full_profile(), RUN).splitlines()
             if ln.startswith("#SBATCH")]
    assert "#SBATCH --partition=gpu" in lines
    assert "#SBATCH --gres=gpu:a100:8" in lines
    assert "#SBATCH --time=1-02:00:00" in lines
    assert lines[-2:] == ["#SBATCH --constraint=a100", "#SBATCH --exclusive"]


def test_an_empty_profile_asks_only_for_what_it_sets():
    text = run_script(ClusterProfile(), RUN)
    for flag in ("--partition", "--account", "--qos", "--gres", "--mem", "--signal"):
        assert f"#SBATCH {flag}" not in text
    assert f"export PATH={Path(sys.executable).parent}" in text
    assert 'bash "$RUN_DIR/command.sh"' in text


def test_resume_after_stop_requeues_a_run_stopped_at_a_checkpoint_and_resumes_it():
    on = run_script(ClusterProfile(signal_seconds=120, resume_after_stop=True), RUN)
    lines = on.splitlines()
    assert "#SBATCH --requeue" in lines and "#SBATCH --signal=B:USR1@120" in lines
    assert 'code=0; python -m sga_core.runs.slurm.job start --resume "$RUN_DIR" || code=$?' \
        in lines
    # every start resumes (the first, with no checkpoint yet, from step 0); only the
    # trainer listens to USR1 (its launcher would die of it)
    assert "(export SGA_TRAIN_RESUME=1; trap '' USR1; exec bash \"$RUN_DIR/command.sh\") &" \
        in lines
    i = lines.index('if [ "$code" -ne 0 ] && python -m sga_core.runs.slurm.job stopped '
                    '"$RUN_DIR"; then')
    assert lines[i + 1:i + 3] == ['  scontrol requeue "$SLURM_JOB_ID" && exit 0', "fi"]
    assert i < next(n for n, ln in enumerate(lines) if "job evaluate" in ln)
    off = run_script(ClusterProfile(signal_seconds=120), RUN)
    assert "#SBATCH --no-requeue" in off and "scontrol requeue" not in off
    assert "SGA_TRAIN_RESUME" not in off and "job start --resume" not in off
    assert "trap forward USR1" in off  # the signal still reaches the trainer (a checkpoint)
    # asked for alone, it implies --requeue and the forwarding of a preemption's USR1
    alone = run_script(ClusterProfile(resume_after_stop=True), RUN)
    assert "#SBATCH --requeue" in alone and "--signal" not in alone
    assert "trap forward USR1" in alone and "scontrol requeue" in alone


def test_array_script_runs_each_folder_and_throttles_to_the_profile():
    runs = [RUN.with_name(f"r{i}") for i in range(6)]
    text = array_script(updated(ClusterProfile(), {"max_jobs": 2}), runs, "sweep-x")
    assert "#SBATCH --array=0-5%2" in text
    assert all(str(r) in text for r in runs)
    one = array_script(updated(ClusterProfile(), {"max_jobs": 8}), runs[:3], "s")
    assert "#SBATCH --array=0-2%3" in one


@pytest.mark.parametrize("changes, key", [
    ({"time_limit": "two hours"}, "time_limit"),
    ({"mem": "lots"}, "mem"),
    ({"partition": "gpu; rm -rf"}, "partition"),
    ({"extra_sbatch": ["constraint=a100"]}, "extra_sbatch"),
    ({"setup": ["a\nb"]}, "extra_sbatch/setup"),
    ({"cpus": 0}, "cpus"),
    ({"backend": "kubernetes"}, "backend"),
])
def test_profile_refuses_what_slurm_would_misread(changes, key):
    with pytest.raises(ConfigError, match=key):
        updated(ClusterProfile(), changes)


def test_profile_round_trips_through_the_workspace(tmp_path):
    save_profile(full_profile(), tmp_path)
    assert profile_path(tmp_path).name == "cluster.yaml"
    assert load_profile(tmp_path) == full_profile()
    assert load_profile(tmp_path / "none") == ClusterProfile()


def test_a_damaged_profile_is_one_line_naming_the_file_and_key(tmp_path):
    profile_path(tmp_path).write_text("cpus: many\n")
    with pytest.raises(ConfigError, match=r"cluster.yaml: cpus"):
        load_profile(tmp_path)
