#!/usr/bin/env bash
# The SLURM job of run sga-r-0p8-k4-20261124-080000, from the workspace's cluster profile.
# Resubmit it by hand: sbatch /shared/runs/sga-r-0p8-k4-20261124-080000/slurm.sh
#SBATCH --job-name=sga-sga-r-0p8-k4-20261124-080000
#SBATCH --output=/shared/runs/sga-r-0p8-k4-20261124-080000/slurm.log
#SBATCH --open-mode=append
#SBATCH --partition=gpu
#SBATCH --account=lab-unlearn
#SBATCH --qos=normal
#SBATCH --time=1-02:00:00
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=32
#SBATCH --gres=gpu:a100:8
#SBATCH --mem=256G
#SBATCH --signal=B:USR1@300
#SBATCH --requeue
#SBATCH --constraint=a100
#SBATCH --exclusive

module load cuda/12.1
source /shared/venv/bin/activate
export PYTHONPATH=<PROJECT_ROOT>${PYTHONPATH:+:$PYTHONPATH}
cd <PROJECT_ROOT>
RUN_DIR=/shared/runs/sga-r-0p8-k4-20261124-080000
# records the node and the wait; a run cancelled before it started ends here (the
# job ends well: exit 3 -> 0); any other failure of the start fails the job
code=0; python -m sga_core.runs.slurm.job start --resume "$RUN_DIR" || code=$?
if [ "$code" -eq 3 ]; then exit 0; elif [ "$code" -ne 0 ]; then exit "$code"; fi
# 2 nodes x 8 processes: accelerate launch once per node (srun);
# the first host of the allocation is the rendezvous, each node's rank its $SLURM_NODEID
export SGA_MAIN_HOST="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"
export SGA_MAIN_PORT=$((29500 + SLURM_JOB_ID % 10000))
# SLURM's USR1 (before the time limit) goes to the training, which saves a
# checkpoint and stops: the training's other processes ignore USR1, and it is
# passed on every 10 s until the training is gone (one that came before the
# trainer listened is not lost)
(export SGA_TRAIN_RESUME=1; trap '' USR1; exec srun --nodes="$SLURM_NNODES" --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c 'accelerate launch --num_machines "$SLURM_NNODES" --machine_rank "$SLURM_NODEID" --main_process_ip "$SGA_MAIN_HOST" --main_process_port "$SGA_MAIN_PORT" --num_processes 16 --dynamo_backend no --multi_gpu -m sga_core.train --config /shared/runs/sga-r-0p8-k4-20261124-080000/config.yaml') &
child=$!
forward() {
  trap '' USR1
  (while kill -0 "$child" 2>/dev/null; do kill -USR1 0; sleep 10; done) &
  forwarder=$!
}
forwarder=
trap forward USR1
code=0; wait "$child" || code=$?
while kill -0 "$child" 2>/dev/null; do code=0; wait "$child" || code=$?; done
[ -z "$forwarder" ] || kill "$forwarder" 2>/dev/null
# stopped at a checkpoint (not cancelled): requeue; the next start resumes
if [ "$code" -ne 0 ] && python -m sga_core.runs.slurm.job stopped "$RUN_DIR"; then
  scontrol requeue "$SLURM_JOB_ID" && exit 0
fi
# the evaluation, in this job, when the run asks for one and did not evaluate itself
if [ "$code" -eq 0 ]; then python -m sga_core.runs.slurm.job evaluate "$RUN_DIR" || code=$?; fi
exit "$code"
