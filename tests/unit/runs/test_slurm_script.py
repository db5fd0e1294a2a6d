"""The SLURM batch script (docs/slurm.md#the-batch-script): its #SBATCH lines come from the
cluster profile, in a fixed order (a golden file), and the profile refuses what SLURM
would misread."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sga_core.assets import PROJECT_ROOT
from sga_core.config import TrainConfig
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


def test_a_resumed_runs_script_continues_from_its_checkpoint_without_requeueing():
    """A resume by request (the Runs page, ``train --resume``: slurm.backend.resume) makes
    slurm.sh again: the job starts as a requeued one does, and the training resumes."""
    lines = run_script(ClusterProfile(), RUN, resume=True).splitlines()
    assert 'code=0; python -m sga_core.runs.slurm.job start --resume "$RUN_DIR" || code=$?' \
        in lines
    assert 'code=0; export SGA_TRAIN_RESUME=1; bash "$RUN_DIR/command.sh" || code=$?' in lines
    assert "#SBATCH --no-requeue" in lines and "scontrol requeue" not in "\n".join(lines)
    assert "resumed by request" in lines[1]
    signalled = run_script(ClusterProfile(signal_seconds=120), RUN, resume=True)
    assert "(export SGA_TRAIN_RESUME=1; trap '' USR1; exec bash \"$RUN_DIR/command.sh\") &" \
        in signalled.splitlines()


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


@pytest.mark.parametrize("start_exit, job_exit, trained", [(0, 0, True), (3, 0, False),
                                                           (1, 1, False), (2, 2, False)])
def test_only_a_run_cancelled_before_it_started_ends_its_job_well(tmp_path, start_exit,
                                                                  job_exit, trained):
    """``job start`` exits 3 when the run was cancelled before it started: the job then ends
    with 0. Any other failure of the start (a crash, a missing module) fails the job, so an
    ``afterok`` evaluation is not released. Run with stub ``python`` and ``accelerate``."""
    import subprocess

    from sga_core.runs.command import write_command_sh

    bin_dir, run_dir = tmp_path / "bin", tmp_path / "runs" / RUN.name
    bin_dir.mkdir()
    run_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(
        '#!/bin/bash\nif [ "$3" = start ]; then exit "$START_EXIT"; fi\nexit 0\n')
    (bin_dir / "accelerate").write_text(f"#!/bin/bash\ntouch {tmp_path}/trained\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    write_command_sh(TrainConfig(), run_dir)
    script = run_dir / "slurm.sh"
    script.write_text(run_script(ClusterProfile(use_workbench_python=False), run_dir))
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin",
                              "START_EXIT": str(start_exit)})
    assert out.returncode == job_exit, out.stderr
    assert (tmp_path / "trained").exists() == trained


def test_setup_and_extra_sbatch_given_as_a_string_are_lines_not_words(tmp_path):
    """``setup: 'source /opt/venv/bin/activate'`` in cluster.yaml is one setup line (not
    ``source`` and ``/opt/venv/bin/activate``); a YAML block is one line per line."""
    profile_path(tmp_path).write_text(
        "setup: 'source /opt/venv/bin/activate'\n"
        "extra_sbatch: |\n  --constraint=a100 --exclusive\n  --comment=two words\n")
    p = load_profile(tmp_path)
    assert p.setup == ["source /opt/venv/bin/activate"]
    assert p.extra_sbatch == ["--constraint=a100 --exclusive", "--comment=two words"]
    lines = run_script(p, RUN).splitlines()
    assert "source /opt/venv/bin/activate" in lines
    assert "#SBATCH --comment=two words" in lines
    assert updated(ClusterProfile(), {"setup": "module load cuda/12.1"}).setup == \
        ["module load cuda/12.1"]


@pytest.mark.parametrize("changes, key", [
    ({"time_limit": "\u0664:\u0660\u0660:\u0660\u0660"}, "time_limit"),  # Arabic-Indic
    ({"time_limit": "\uff14"}, "time_limit"),                                # fullwidth 4
    ({"mem": "\u0663\u0662G"}, "mem"),
    ({"mem": "\u09e8G"}, "mem"),                                              # Bengali 2
    ({"partition": "p" * 20_000_000}, "partition: 20000000 characters is too long"),
    ({"account": "a" * 129}, "account: 129 characters is too long"),
    ({"time_limit": "1" * 33}, "time_limit: 33 characters is too long"),
    ({"setup": ["x" * 1001]}, "setup: a line of 1001 characters"),
    ({"extra_sbatch": ["--exclusive"] * 101}, "extra_sbatch: 101 lines is too many"),
    ({"setup": ["echo \x1b[31m"]}, "control character"),
    ({"extra_sbatch": ["--comment=a\u2028b"]}, "control character"),
])
def test_profile_strings_are_ascii_digits_and_bounded(changes, key):
    with pytest.raises(ConfigError, match=key):
        updated(ClusterProfile(), changes)


def test_ascii_times_and_sizes_still_pass():
    p = updated(ClusterProfile(), {"time_limit": "1-02:00:00", "mem": "32g",
                                   "setup": ["\tmodule load x"]})
    assert (p.time_limit, p.mem) == ("1-02:00:00", "32g")
