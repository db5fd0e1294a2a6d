"""A multi-node SLURM job (docs/slurm.md#multi-node-runs): ``srun`` starts accelerate once
per node, ``--num_processes`` is GPUs per node x nodes, and each node's shell fills in its
own machine rank and the allocation's first host as the rendezvous."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sga_core.assets import PROJECT_ROOT
from sga_core.config import TrainConfig
from sga_core.runs.slurm.profile import ClusterProfile
from sga_core.runs.slurm.script import launch_lines, run_script

GOLDEN = Path(__file__).parent / "golden" / "slurm-2node.sh"
RUN = Path("/shared/runs/sga-r-0p8-k4-20261124-080000")


def two_nodes() -> ClusterProfile:
    return ClusterProfile(partition="gpu", gpus=8, cpus=32, nodes=2,
                          setup=["module load cuda/12.1"], use_workbench_python=False)


def fsdp() -> TrainConfig:
    cfg = TrainConfig()
    cfg.launch.config_file = "configs/accelerate/fsdp_8gpu.yaml"
    return cfg


def test_two_node_script_matches_the_golden_file():
    text = run_script(two_nodes(), RUN, fsdp()).replace(str(PROJECT_ROOT), "<PROJECT_ROOT>")
    assert text == GOLDEN.read_text()


def test_one_node_whose_gpus_match_the_run_keeps_command_sh():
    assert launch_lines(ClusterProfile(gpus=1), RUN, TrainConfig()) == (
        [], 'bash "$RUN_DIR/command.sh"')
    setup, line = launch_lines(ClusterProfile(gpus=4), RUN, TrainConfig())
    assert "srun" not in line and "--num_processes 4 " in line and "--multi_gpu" in line


@pytest.mark.skipif(shutil.which("scontrol") is None, reason="needs SLURM's scontrol")
def test_each_node_gets_its_rank_and_the_first_host(tmp_path):
    """Run the job's setup lines and the per-node command as each node's shell would (the
    real scontrol expands the node list), with ``accelerate`` printing its arguments."""
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\nSlurmctldHost=localhost\n"
                    "NodeName=localhost CPUs=1 State=UNKNOWN\n"
                    "PartitionName=p Nodes=localhost Default=YES\n")
    setup, line = launch_lines(two_nodes(), RUN, fsdp())
    per_node = line.split(" bash -c ", 1)[1]
    env = {**os.environ, "SLURM_CONF": str(conf), "SLURM_JOB_NODELIST": "gpu[07-08]",
           "SLURM_JOB_ID": "4321", "SLURM_NNODES": "2"}
    seen = {}
    for node in ("0", "1"):
        script = "\n".join([
            *setup,
            "accelerate() { printf '%s\\n' \"$@\"; }; export -f accelerate",
            f"SLURM_NODEID={node} bash -c {per_node}",
        ])
        out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                             check=True, timeout=60).stdout.split("\n")
        seen[node] = {out[i]: out[i + 1] for i in range(len(out) - 1)
                      if out[i].startswith("--")}
    for node, args in seen.items():
        assert args["--machine_rank"] == node
        assert args["--num_machines"] == "2"
        assert args["--main_process_ip"] == "gpu07"
        assert args["--main_process_port"] == str(29500 + 4321 % 10000)
        assert args["--num_processes"] == "16"
        assert args["--config_file"] == "configs/accelerate/fsdp_8gpu.yaml"
        assert args["--config"] == f"{RUN}/config.yaml"


def test_the_runs_own_port_wins():
    cfg = fsdp()
    cfg.launch.main_process_port = 29612
    setup, _ = launch_lines(two_nodes(), RUN, cfg)
    assert "export SGA_MAIN_PORT=29612" in setup
