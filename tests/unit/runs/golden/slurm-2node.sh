#!/usr/bin/env bash
# The SLURM job of run sga-r-0p8-k4-20261124-080000, from the workspace's cluster profile.
# Resubmit it by hand: sbatch /shared/runs/sga-r-0p8-k4-20261124-080000/slurm.sh
#SBATCH --job-name=sga-sga-r-0p8-k4-20261124-080000
#SBATCH --output=/shared/runs/sga-r-0p8-k4-20261124-080000/slurm.log
#SBATCH --open-mode=append
#SBATCH --partition=gpu
#SBATCH --time=4:00:00
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=32
#SBATCH --gres=gpu:8
#SBATCH --no-requeue

module load cuda/12.1
export PYTHONPATH=<PROJECT_ROOT>${PYTHONPATH:+:$PYTHONPATH}
cd <PROJECT_ROOT>
RUN_DIR=/shared/runs/sga-r-0p8-k4-20261124-080000
# records the node and the wait; a run cancelled before it started ends here (the
# job ends well: exit 3 -> 0); any other failure of the start fails the job
code=0; python -m sga_core.runs.slurm.job start "$RUN_DIR" || code=$?
if [ "$code" -eq 3 ]; then exit 0; elif [ "$code" -ne 0 ]; then exit "$code"; fi
# 2 nodes x 8 processes: accelerate launch once per node (srun);
# the first host of the allocation is the rendezvous, each node's rank its $SLURM_NODEID
export SGA_MAIN_HOST="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"
export SGA_MAIN_PORT=$((29500 + SLURM_JOB_ID % 10000))
code=0; srun --nodes="$SLURM_NNODES" --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c 'accelerate launch --config_file configs/accelerate/fsdp_8gpu.yaml --num_machines "$SLURM_NNODES" --machine_rank "$SLURM_NODEID" --main_process_ip "$SGA_MAIN_HOST" --main_process_port "$SGA_MAIN_PORT" --num_processes 16 -m sga_core.train --config /shared/runs/sga-r-0p8-k4-20261124-080000/config.yaml' || code=$?
# the evaluation, in this job, when the run asks for one and did not evaluate itself
if [ "$code" -eq 0 ]; then python -m sga_core.runs.slurm.job evaluate "$RUN_DIR" || code=$?; fi
exit "$code"
