"""Benchmark: the SLURM backend on a real one-node cluster started here (Debian's slurm-wlm
and munge, as the tests start it: tests/helpers/slurm.py; needs root and the packages).

    python bench/slurm_latency.py                 # latency + polling (a few minutes)
    python bench/slurm_latency.py --sweep         # also a 6-run sweep, 2 at a time, both ways

- latency: from submit to the first training step in metrics.jsonl, the same tiny run
  (random tiny model, GA, 3 steps, no evaluation) through SLURM (sbatch, the job runs
  command.sh: ``accelerate launch``) and through the local queue (the runner starts
  ``python -m sga_core.train`` directly); interleaved, medians;
- sweep (``--sweep``): the wall time of 6 runs with 2 slots, SLURM job array ``%2`` against
  the local runner with ``--max-parallel 2``;
- polling: 50 SLURM runs listed (held jobs: they stay pending), the Runs page's read of them
  once a second for ``--poll-s`` seconds; how many squeue/sacct calls that makes per minute.

The last line: ``slurm_first_step_s=<x> local_first_step_s=<y> squeue_per_min=<n>
sacct_per_min=<m>`` (and ``slurm_sweep_s=.. local_sweep_s=..`` with --sweep).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEMO = ROOT / "assets" / "demo"


def tiny_config(model: Path, data: Path, steps: int):
    from sga_core.config import TrainConfig

    return TrainConfig.from_dict({
        "model": str(model), "method": "ga",
        "data": {"forget": str(data / "forget.jsonl"), "retain": str(data / "retain.jsonl")},
        "training": {"max_steps": steps, "batch_size": 2, "eval_nll": False,
                     "probe_every": 0},
        "launch": {"device": "cpu"}, "eval": {"enabled": False}}, base_dir=ROOT)


def first_step_s(run_dir: Path, t0: float, timeout: float = 900) -> float:
    from sga_core.runs.folder import RunFolder

    path = RunFolder(run_dir).metrics_path
    while time.time() - t0 < timeout:
        if path.exists() and path.stat().st_size:
            return time.time() - t0
        time.sleep(0.1)
    raise TimeoutError(f"{run_dir.name}: no training step after {timeout} s")


def wait_final(dirs: list[Path], timeout: float = 1800) -> None:
    from sga_core.runs import status as run_status

    t0 = time.time()
    while time.time() - t0 < timeout:
        if all(run_status.effective_run(d).get("state") in run_status.FINAL_STATES
               for d in dirs):
            return
        time.sleep(0.5)
    raise TimeoutError("runs did not end")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--poll-s", type=float, default=60.0)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--sweep", action="store_true")
    args = p.parse_args()

    import os

    from sga_core.fileio import atomic_write_jsonl
    from sga_core.model.tiny import build_tiny_model
    from sga_core.runs import queue
    from sga_core.runs.listing import list_runs
    from sga_core.runs.slurm import backend, client
    from sga_core.runs.slurm.profile import ClusterProfile
    from tests.helpers.slurm import LocalSlurm, missing

    why = missing()
    if why:
        print(f"no local SLURM cluster: {why}\nslurm=none")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="sga-bench-slurm-"))
    cluster = LocalSlurm(tmp / "cluster")
    t_start = time.time()
    cluster.start()
    os.environ["SLURM_CONF"] = str(cluster.conf)
    print(f"cluster up in {time.time() - t_start:.1f} s ({cluster.cpus} CPUs)")
    try:
        model = build_tiny_model(tmp / "tiny-model")
        data = tmp / "inputs"
        data.mkdir()
        for name in ("forget", "retain"):
            rows = [json.loads(x) for x in (DEMO / f"{name}.jsonl").read_text().splitlines()]
            atomic_write_jsonl(data / f"{name}.jsonl", rows[:8])
        profile = ClusterProfile(cpus=1, time_limit="30", max_jobs=2)
        slurm_root, local_root = tmp / "runs-slurm", tmp / "runs-local"
        lat = {"slurm": [], "local": []}
        for i in range(args.repeats):
            for way in (("slurm", "local") if i % 2 == 0 else ("local", "slurm")):
                cfg = tiny_config(model, data, 3)
                t0 = time.time()
                if way == "slurm":
                    (run_dir,) = backend.submit([cfg], slurm_root, profile=profile)
                else:
                    run_dir = queue.submit(cfg, local_root)
                lat[way].append(first_step_s(run_dir, t0))
                wait_final([run_dir])
                print(f"  {way:5s} submit -> first step {lat[way][-1]:6.1f} s")
        med = {k: statistics.median(v) for k, v in lat.items()}
        print(f"latency (median of {args.repeats}): SLURM {med['slurm']:.1f} s, "
              f"local {med['local']:.1f} s")

        sweep = {}
        if args.sweep:
            for way in ("slurm", "local"):
                cfgs = []
                for k in range(6):
                    c = tiny_config(model, data, 3)
                    c.sweep = f"bench-{way}"
                    c.training.seed = k
                    cfgs.append(c)
                t0 = time.time()
                if way == "slurm":
                    dirs = backend.submit(cfgs, tmp / "sweep-slurm", profile=profile)
                else:
                    dirs = [queue.submit(c, tmp / "sweep-local", max_parallel=2)
                            for c in cfgs]
                wait_final(dirs)
                sweep[way] = time.time() - t0
                print(f"6-run sweep, 2 at a time, {way}: {sweep[way]:.1f} s")

        # polling: 50 held (pending) runs, read as the Runs page reads them, once a second
        held = ClusterProfile(cpus=1, time_limit="30", max_jobs=args.runs,
                              extra_sbatch=["--hold"])
        poll_root = tmp / "runs-poll"
        cfgs = []
        for k in range(args.runs):
            c = copy.deepcopy(tiny_config(model, data, 3))
            c.training.seed = k
            c.group = "bench-poll"
            cfgs.append(c)
        backend.submit(cfgs, poll_root, profile=held)
        client.TABLE.forget()
        before = dict(client.CALLS)
        t0 = time.time()
        reads = 0
        while time.time() - t0 < args.poll_s:
            rows = list_runs(poll_root)
            reads += 1
            assert len(rows) == args.runs and all(r["state"] == "queued" for r in rows)
            time.sleep(1.0)
        minutes = (time.time() - t0) / 60
        calls = {t: client.CALLS[t] - before.get(t, 0) for t in ("squeue", "sacct")}
        per_min = {t: calls[t] / minutes for t in calls}
        print(f"polling {args.runs} runs, {reads} page reads in {minutes * 60:.0f} s: "
              f"squeue {per_min['squeue']:.1f}/min, sacct {per_min['sacct']:.1f}/min "
              f"(cache {client.TABLE.ttl:g} s)")
        cluster.run("scancel", "-u", "root", check=False)
        line = (f"slurm_first_step_s={med['slurm']:.1f} local_first_step_s={med['local']:.1f} "
                f"squeue_per_min={per_min['squeue']:.1f} sacct_per_min={per_min['sacct']:.1f}")
        if sweep:
            line += f" slurm_sweep_s={sweep['slurm']:.1f} local_sweep_s={sweep['local']:.1f}"
        print(line)
    finally:
        try:
            cluster.cancel_all()
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
