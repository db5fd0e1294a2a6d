"""Hostile values in every field that goes into a generated SLURM script:
``$()``, backticks, quotes, ``;``, line breaks, spaces and ``%`` in the runs folder's path,
the accelerate config file, evaluation set paths, stress settings and the names. Every
script kind (``slurm.sh`` on one node, with GPUs, over two nodes, with the signal trap;
``slurm-eval.sh``; ``slurm-stress.sh``; ``slurm-array.sh``) is generated with each value;
then

- each value's word parses back (:func:`shlex.split`) to the literal value (``--output``:
  sbatch's pattern, ``%`` written ``%%``), and every ``#SBATCH`` line comes before the first
  command (sbatch reads no directive after it);
- the script, run by bash with stub ``python``, ``accelerate``, ``srun``, ``scontrol``,
  creates no file (the canary folder stays empty) and hands accelerate the exact value;
- a value no script can hold (a line break or a control character in a path, in a name) is
  refused with a message naming it, and nothing is written.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from sga_core import workbench as wb
from sga_core.config import TrainConfig
from sga_core.params import ConfigError
from sga_core.runs.command import write_command_sh
from sga_core.runs.launch import eval_argv, stress_argv
from sga_core.runs.slurm.profile import ClusterProfile
from sga_core.runs.slurm.script import array_script, eval_script, run_script
from tests.helpers.cli import sga_cli

RUN_ID = "sga-r-0p8-k4-20261124-080000"
DEMO = Path(__file__).resolve().parents[2] / "assets" / "demo"
STUBS = ("python", "accelerate", "srun", "scontrol", "sbatch", "squeue", "sacct", "scancel")


def hostile(canary: Path) -> list[str]:
    """One value per class: each would create a file in ``canary`` if a shell ran it."""
    c = canary
    return [f"$(touch {c}/dollar)", f"`touch {c}/backtick`", f"x'; touch {c}/squote; '",
            f'x"; touch {c}/dquote; "', f'"$(touch {c}/dq-dollar)"', f"x; touch {c}/semi",
            f"x && touch {c}/and", f"x\ntouch {c}/newline #", f"x\r\ntouch {c}/crlf",
            "with space", "100%j %A %% %x", "x#not-a-comment", "$HOME ${PATH}",
            f"x\\\ntouch {c}/escaped-newline"]


def unsafe_in_a_script(value: str) -> bool:
    """What no SLURM script can hold in a path or name: a line break, a control character
    (and, in a path, a backslash: sbatch drops it from --output)."""
    return not value.isprintable() or "\\" in value


@pytest.fixture()
def stubs(tmp_path):
    """A folder of stub tools (each records its arguments, NUL-separated, one file per
    call) and the canary folder a hostile value would write into."""
    bin_dir, calls, canary = tmp_path / "bin", tmp_path / "calls", tmp_path / "canary"
    for d in (bin_dir, calls, canary):
        d.mkdir()
    for name in STUBS:
        tool = bin_dir / name
        tool.write_text("#!/bin/bash\n"
                        'f=$(mktemp "$STUB_CALLS/call.XXXXXX")\n'
                        f"printf '%s\\0' {name} \"$@\" > \"$f\"\n"
                        'if [ "$1" = show ]; then echo node1; fi\n'  # scontrol show hostnames
                        f'if [ {name} = srun ]; then while [ "${{1#--}}" != "$1" ]; do shift; '
                        'done; exec "$@"; fi\n'
                        f'if [ {name} = python ] && [ "$3" = start ]; then '
                        'exit "${STUB_START_EXIT:-0}"; fi\n'
                        "exit 0\n")
        tool.chmod(0o755)
    return {"bin": bin_dir, "calls": calls, "canary": canary}


def run_with_stubs(stubs, script: Path, **env) -> subprocess.CompletedProcess:
    full = {"PATH": f"{stubs['bin']}:/usr/bin:/bin", "HOME": str(stubs["canary"].parent),
            "STUB_CALLS": str(stubs["calls"]), "SLURM_JOB_ID": "4321", "SLURM_NNODES": "2",
            "SLURM_NODEID": "0", "SLURM_JOB_NODELIST": "node1", "SLURM_ARRAY_TASK_ID": "0",
            **env}
    return subprocess.run(["bash", str(script)], env=full, capture_output=True, text=True,
                          timeout=60, cwd=stubs["canary"].parent)


def calls(stubs) -> list[list[str]]:
    return [p.read_bytes().decode().split("\0")[:-1]
            for p in sorted(stubs["calls"].iterdir())]


def header_before_commands(text: str) -> None:
    """Every #SBATCH line comes before the first command line (sbatch stops there)."""
    lines = text.split("\n")
    first_cmd = next(i for i, ln in enumerate(lines[1:], 1)
                     if ln.strip() and not ln.startswith("#"))
    assert all(i < first_cmd for i, ln in enumerate(lines) if ln.startswith("#SBATCH"))


def sbatch_value(text: str, flag: str) -> str:
    (line,) = [ln for ln in text.split("\n") if ln.startswith(f"#SBATCH {flag}=")]
    words = shlex.split(line)
    assert len(words) == 2, line
    return words[1].split("=", 1)[1]


PROFILES = {
    "one-node": ClusterProfile(use_workbench_python=False),
    "gpus": ClusterProfile(gpus=2, use_workbench_python=False),
    "two-nodes": ClusterProfile(gpus=2, nodes=2, use_workbench_python=False),
    "signal": ClusterProfile(signal_seconds=60, resume_after_stop=True,
                             use_workbench_python=False),
}


def hostile_cases():
    for i, _ in enumerate(hostile(Path("/c"))):
        for kind in PROFILES:
            yield pytest.param(i, kind, id=f"{kind}-{i}")


@pytest.mark.parametrize("i, kind", list(hostile_cases()))
def test_run_scripts_quote_or_refuse_every_value(tmp_path, stubs, i, kind):
    value = hostile(stubs["canary"])[i]
    run_dir = tmp_path / "runs" / value / RUN_ID
    cfg = TrainConfig()
    cfg.launch.config_file = value  # unchecked here: the script alone must hold it
    profile = PROFILES[kind]
    if unsafe_in_a_script(value):
        with pytest.raises(ConfigError, match="run folder"):
            run_script(profile, run_dir, cfg)
        return
    text = run_script(profile, run_dir, cfg)
    header_before_commands(text)
    assert sbatch_value(text, "--output") == f"{run_dir}/slurm.log".replace("%", "%%")
    assert sbatch_value(text, "--job-name") == f"sga-{RUN_ID}"
    lines = text.split("\n")
    assert shlex.split(next(ln for ln in lines if ln.startswith("RUN_DIR="))) == \
        [f"RUN_DIR={run_dir}"]
    resubmit = next(ln for ln in lines if ln.startswith("# Resubmit"))
    assert shlex.split(resubmit.split("sbatch ", 1)[1]) == [f"{run_dir}/slurm.sh"]

    run_dir.mkdir(parents=True)
    write_command_sh(cfg, run_dir)
    (run_dir / "slurm.sh").write_text(text)
    out = run_with_stubs(stubs, run_dir / "slurm.sh")
    assert out.returncode == 0, out.stderr
    assert list(stubs["canary"].iterdir()) == []
    (launch,) = [c for c in calls(stubs) if c[0] == "accelerate"]
    assert launch[launch.index("--config_file") + 1] == value
    assert launch[launch.index("--config") + 1] == f"{run_dir}/config.yaml"


@pytest.mark.parametrize("i", range(len(hostile(Path("/c")))))
def test_eval_stress_and_array_scripts_quote_or_refuse_every_value(tmp_path, stubs, i):
    value = hostile(stubs["canary"])[i]
    profile = PROFILES["one-node"]
    run_dir = tmp_path / "runs" / value / RUN_ID
    jobs = {"eval": eval_argv(run_dir, {"extra": value}),
            "stress": stress_argv(run_dir, ["relearning"], {"device": value})}
    if unsafe_in_a_script(value):
        for argv in jobs.values():
            with pytest.raises(ConfigError, match="run folder"):
                eval_script(profile, run_dir, argv)
        with pytest.raises(ConfigError, match="run folder"):
            array_script(profile, [run_dir], "sweep-x")
        with pytest.raises(ConfigError, match="job name"):  # a name: refused, never cut
            array_script(profile, [tmp_path / RUN_ID], value)
        return
    run_dir.mkdir(parents=True)
    for job, argv in jobs.items():
        text = eval_script(profile, run_dir, argv, job=job)
        header_before_commands(text)
        assert sbatch_value(text, "--output") == f"{run_dir}/slurm.log".replace("%", "%%")
        (command,) = [ln for ln in text.split("\n") if ln.startswith("python ")]
        assert shlex.split(command) == argv
        script = run_dir / f"slurm-{job}.sh"
        script.write_text(text)
        out = run_with_stubs(stubs, script)
        assert out.returncode == 0, out.stderr
        assert calls(stubs)[-1] == argv  # python got the literal arguments
        for p in stubs["calls"].iterdir():
            p.unlink()
    # the array: its name in the job name and a comment, each run folder in RUNS
    write_command_sh(TrainConfig(), run_dir)
    (run_dir / "slurm.sh").write_text(run_script(profile, run_dir))
    text = array_script(profile, [run_dir], value)
    header_before_commands(text)
    assert "#SBATCH --array=0-0%1" in text.split("\n")
    assert sbatch_value(text, "--job-name") == f"sga-{value}"[:64]
    runs = next(ln for ln in text.split("\n") if ln.startswith("RUNS=("))
    assert shlex.split(runs[len("RUNS=("):-1]) == [str(run_dir)]
    script = tmp_path / "slurm-array.sh"
    script.write_text(text)
    out = run_with_stubs(stubs, script)
    assert out.returncode == 0, out.stderr
    assert list(stubs["canary"].iterdir()) == []
    assert (run_dir / "slurm.log").exists()  # the task's output, at the literal path


@pytest.mark.parametrize("value", ["x\ntouch FILE #", "a\rb", "my sweep", "x;y", "$(id)",
                                   "`id`", "a'b", 'a"b', "100%", "é" * 3, "-x", "x" * 101])
def test_sweep_and_group_names_are_refused_where_they_are_read(tmp_path, value):
    """A group where any config is read; a sweep where a new run is made (create_run: the
    CLI, the pages, SLURM all make runs there), before any run folder exists."""
    from sga_core.runs.create import create_run

    with pytest.raises(ConfigError, match="^group: .*letters, digits"):
        TrainConfig.from_dict({"method": "ga", "data": {"forget": "f.jsonl"}, "group": value})
    try:
        cfg = TrainConfig.from_dict({"method": "ga", "data": {"forget": "f.jsonl"},
                                     "sweep": value})
    except ConfigError as exc:  # a line break or control character: refused on reading
        assert str(exc).startswith("sweep: ") and any(ord(c) < 32 for c in value)
        return
    with pytest.raises(ConfigError, match="^sweep: .*letters, digits"):
        create_run(cfg, tmp_path / "runs")
    assert not (tmp_path / "runs").exists() or not any(
        p for p in (tmp_path / "runs").iterdir() if not p.name.startswith("."))


def test_an_older_runs_sweep_name_with_a_space_still_loads():
    """Runs made before sweep names were checked ("my sweep-...", which the Train page
    took) still load, resume and evaluate: every generated script quotes the name."""
    cfg = TrainConfig.from_dict({"method": "ga", "data": {"forget": "f.jsonl"},
                                 "sweep": "my sweep-20261101-0900"})
    assert cfg.sweep == "my sweep-20261101-0900"


@pytest.mark.parametrize("value", ["x\ntouch FILE #", "my sweep", "x" * 90])
def test_a_sweep_name_is_refused_before_any_run_folder(tmp_path, value):
    """The Train page's sweep name (its runs would go to SLURM or the local queue)."""
    with pytest.raises(ConfigError, match="sweep name: .*no spaces"):
        wb.queue_sweep(lambda g, v: None, [0.0], value, tmp_path / "runs", "slurm")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("value", ["a\nb", "x\r", "x\x00y", "x\x1b[31m", "a\u2028b"])
def test_a_config_file_with_a_line_break_is_refused(value):
    with pytest.raises(ConfigError, match="launch.config_file: .*not a file path"):
        TrainConfig.from_dict({"method": "ga", "data": {"forget": "f.jsonl"},
                               "launch": {"config_file": value}})


def test_the_cli_refuses_a_sweep_name_with_a_line_break_before_anything(tmp_path):
    """``train ... --seeds 2 --sweep $'x\\ntouch FILE #' --backend slurm``: refused with the
    field named; no run folder, no file."""
    canary = tmp_path / "FILE"
    out = sga_cli("train", "--method", "ga", "--forget", str(DEMO / "forget.jsonl"),
                  "--seeds", "2", "--sweep", f"x\ntouch {canary} #",
                  "--backend", "slurm", "--runs-dir", str(tmp_path / "runs"),
                  "--workspace", str(tmp_path / "ws"), timeout=300)
    assert out.returncode != 0
    assert "sweep:" in out.stderr and "Traceback" not in out.stderr
    assert not canary.exists()
    assert not (tmp_path / "runs").exists() or not any(
        p for p in (tmp_path / "runs").iterdir() if not p.name.startswith("."))


@pytest.mark.parametrize("runs_dir, ok", [("x\ntouch {c} #", False), ("a b%c'$(touch {c})", True)])
def test_cluster_preview_quotes_or_refuses_the_runs_folder(tmp_path, runs_dir, ok):
    canary = tmp_path / "FILE"
    runs = str(tmp_path / runs_dir.format(c=canary))
    out = sga_cli("cluster", "preview", "--runs-dir", runs, "--workspace",
                  str(tmp_path / "ws"), timeout=120)
    assert "Traceback" not in out.stderr
    if not ok:
        assert out.returncode != 0 and "folder" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
        assert out.stdout == ""
        return
    assert out.returncode == 0, out.stderr
    assert sbatch_value(out.stdout, "--output") == \
        f"{Path(runs).resolve()}/RUN_ID/slurm.log".replace("%", "%%")
    assert not canary.exists()


def test_every_character_class_was_tried():
    values = hostile(Path("/c"))
    for needle in ("$(", "`", "'", '"', ";", "\n", " ", "%"):
        assert any(needle in v for v in values), needle
    assert os.sep == "/"


PROFILE_STRINGS = ("partition", "account", "qos", "gres_type", "time_limit", "mem",
                   "extra_sbatch")


@pytest.mark.parametrize("key", PROFILE_STRINGS)
def test_profile_strings_are_refused_or_inert(tmp_path, stubs, key):
    """Each hostile value in each string setting of the cluster profile is refused (naming
    the setting) or, as an extra #SBATCH line the person wrote, stays inside its #SBATCH
    line and runs nothing. (``setup`` lines are shell commands by contract.)"""
    from sga_core.runs.slurm.profile import updated

    values = [*hostile(stubs["canary"]), "\u0664:\u0660\u0660", "x" * 5000]
    accepted = 0
    for value in values:
        change = {key: [f"--comment={value}"] if key == "extra_sbatch" else value}
        try:
            profile = updated(ClusterProfile(use_workbench_python=False), change)
        except ConfigError as exc:
            assert str(exc).startswith(key.split("_")[0]) or "extra_sbatch" in str(exc)
            continue
        accepted += 1
        run_dir = tmp_path / f"r{accepted}" / RUN_ID
        run_dir.mkdir(parents=True)
        write_command_sh(TrainConfig(), run_dir)
        text = run_script(profile, run_dir)
        header_before_commands(text)
        (run_dir / "slurm.sh").write_text(text)
        assert run_with_stubs(stubs, run_dir / "slurm.sh").returncode == 0
        assert list(stubs["canary"].iterdir()) == []
    assert accepted < len(values)


def test_counts(tmp_path, capsys):
    """The closing note's figures for this file: each hostile value in each field of each
    script kind, refused with a message naming the field, or quoted (parsing back to the
    literal); never an uncaught exception, never an injected line."""
    from sga_core.runs.slurm.profile import updated

    counts = {"tried": 0, "clear errors": 0, "quoted": 0}

    def attempt(make, *args) -> None:
        counts["tried"] += 1
        try:
            made = make(*args)
        except ConfigError as exc:
            assert "\n" not in str(exc)
            counts["clear errors"] += 1
            return
        if isinstance(made, str):
            header_before_commands(made)
        counts["quoted"] += 1

    one = PROFILES["one-node"]
    for value in [*hostile(tmp_path / "canary"), "\u0664:\u0660\u0660", "x" * 5000]:
        run_dir = tmp_path / "runs" / value / RUN_ID
        cfg = TrainConfig()
        cfg.launch.config_file = value
        for profile in PROFILES.values():
            attempt(run_script, profile, run_dir, cfg)
            attempt(run_script, profile, tmp_path / RUN_ID, cfg)
        attempt(eval_script, one, run_dir, eval_argv(run_dir))
        attempt(eval_script, one, tmp_path / RUN_ID, eval_argv(tmp_path / RUN_ID, {"x": value}))
        attempt(array_script, one, [tmp_path / RUN_ID], value)
        for key in ("sweep", "group"):
            attempt(TrainConfig.from_dict, {"method": "ga", "data": {"forget": "f.jsonl"},
                                            key: value})
        for key in PROFILE_STRINGS:
            change = {key: [f"--comment={value}"] if key == "extra_sbatch" else value}
            attempt(lambda c: run_script(updated(ClusterProfile(), c), tmp_path / RUN_ID),
                    change)
    with capsys.disabled():
        print(f"\nSLURM scripts: {counts['tried']} inputs tried, {counts['clear errors']} "
              f"clear errors, {counts['quoted']} quoted, 0 uncaught exceptions, "
              "0 injections (the stub runs above), 0 files written on failure")
    assert counts["clear errors"] + counts["quoted"] == counts["tried"]
