"""The SLURM backend: runs, sweeps and seed groups sent to a cluster with its own tools
(``sbatch``, ``squeue``, ``sacct``, ``scancel``) instead of the local queue (docs/slurm.md).

- :mod:`.profile`: the cluster profile kept in the workspace (``cluster.yaml``);
- :mod:`.script`: the batch scripts (``slurm.sh`` in each run folder, ``slurm-array.sh``);
- :mod:`.backend`: submit (one job, or a job array) and cancel;
- :mod:`.client`: the tools, and the batched, cached view of the jobs;
- :mod:`.states`: SLURM's states in the workbench's words;
- :mod:`.job`: what the job runs around the run folder's command.sh.
"""
