"""Seeds as a dimension of every launch, preset and sweep.

A config whose ``training.seeds`` names several seeds (a count or a list,
:func:`sga_core.params.parse_seeds`) becomes one run folder per seed: each with its own
``training.seed``, the whole list in ``training.seeds``, and one shared ``group`` (the
configuration's id; the Results page pools a group's runs into mean, sd and interval). Run
ids are the configuration's id plus ``-s<seed>``. In a sweep every value becomes its own
group (``<sweep>-<value>``), and the runs are queued seed by seed (every value at the first
seed, then every value at the next), so a sweep stopped half-way still covers every value.
"""

from __future__ import annotations

import copy
import os
from datetime import datetime
from pathlib import Path

from sga_core.config import TrainConfig
from sga_core.params import parse_seeds
from sga_core.runs.create import MAX_ID_TRIES, base_run_id, id_candidates
from sga_core.runs.folder import runs_root


def seed_run_id(base: str, seed: int) -> str:
    """``<base>-s<seed>``, the base cut so the whole stays a valid run id (64 characters)."""
    suffix = f"-s{seed}"
    return base[:64 - len(suffix)].rstrip("-") + suffix


GROUP_CLAIMS = ".seed-groups"  # in the runs folder: one empty folder per group id taken


def claim_group_id(root: Path, seeds: list[int], base: str) -> str:
    """A seed group id of this launch's own: the first of ``base``, ``base-2``, ... whose
    run ids (``<id>-s<seed>``) are all free, claimed by making the folder
    ``.seed-groups/<id>`` (atomic: a launch at the same moment, in another thread or
    process, finds it made and moves on to the next id)."""
    claims = Path(root) / GROUP_CLAIMS
    claims.mkdir(parents=True, exist_ok=True)
    # short enough that no seed's run id cuts the "-<n>" of a later candidate off
    room = 64 - max(len(f"-s{s}") for s in seeds) - len(f"-{MAX_ID_TRIES}")
    for candidate in id_candidates(base[:room].rstrip("-")):
        if any((Path(root) / seed_run_id(candidate, s)).exists() for s in seeds):
            continue
        try:
            os.mkdir(claims / candidate)
        except FileExistsError:
            continue
        return candidate
    raise AssertionError("unreachable: id_candidates ends with an error")


def seeds_of(cfg: TrainConfig) -> list[int]:
    return parse_seeds(cfg.training.seeds, cfg.training.seed)


def expand_seeds(cfg: TrainConfig, root=None) -> list[TrainConfig]:
    """One config per seed of ``cfg.training.seeds`` (just ``cfg`` for a single seed), all
    in one group: ``cfg.group``, else the configuration's run id."""
    seeds = seeds_of(cfg)
    if len(seeds) == 1:
        cfg.training.seed = seeds[0]
        return [cfg]
    root = runs_root(root)
    if cfg.run_id:
        base = cfg.run_id
    else:
        base = claim_group_id(root, seeds, base_run_id(cfg))
    ids = [seed_run_id(base, s) for s in seeds]
    out = []
    for seed, run_id in zip(seeds, ids):
        c = copy.deepcopy(cfg)
        c.training.seed = seed
        c.training.seeds = ", ".join(str(s) for s in seeds)
        c.group = cfg.group or base
        c.run_id = run_id
        out.append(c.validate())
    return out


#: what :func:`sweep_name` adds to the name given: ``-YYYYmmdd-HHMMSS``
SWEEP_STAMP_LEN = 16


def sweep_name(name: str | None) -> str:
    """The sweep's group name: ``name`` (checked as it is read: no space, quote or line
    break; short enough for the time stamp) and the time."""
    from sga_core.config import name_problem
    from sga_core.params import ConfigError

    problem = name_problem(name or "sweep", 100 - SWEEP_STAMP_LEN)
    if problem:
        raise ConfigError(f"sweep name: {problem}")
    return f"{name or 'sweep'}-{datetime.now():%Y%m%d-%H%M%S}"


def sweep_configs(make_cfg, values: list[float], group: str, root=None) -> list[TrainConfig]:
    """The configs of a sweep group: ``make_cfg(group, value)`` for each value, each
    repeated over its seeds (its own seed group), ordered seed by seed."""
    from sga_core.methods import get_method

    per_value = []
    for v in values:
        cfg = make_cfg(group, v)
        if len(seeds_of(cfg)) > 1 and not cfg.group:
            parts = get_method(cfg.method).id_parts(cfg.method_args) or [f"{v:g}"]
            cfg.group = f"{group}-{'-'.join(parts)}"[:100]
        per_value.append(expand_seeds(cfg, root))
    width = max(len(p) for p in per_value) if per_value else 0
    return [p[i] for i in range(width) for p in per_value if i < len(p)]


def submit_seeds(cfg: TrainConfig, root=None, backend: str = "local",
                 workspace=None) -> list[Path]:
    """Queue ``cfg`` once per seed (one run when it has one seed); the run folders. With
    ``backend="slurm"`` the runs go to SLURM (a seed group as one job array)."""
    return submit_configs(expand_seeds(cfg, root), root, backend, workspace)


def submit_configs(cfgs: list[TrainConfig], root=None, backend: str = "local",
                   workspace=None) -> list[Path]:
    """Send ``cfgs`` to the backend named ``backend`` (:mod:`sga_core.runs.backends`): the
    local queue, or SLURM (one job, or one job array)."""
    from sga_core.runs.backends import backend as named

    return named(backend).launch(cfgs, root, workspace=workspace)


def queue_sweep(make_cfg, values: list[float], name: str, root=None,
                backend: str = "local") -> tuple[str, list[Path]]:
    """Queue one run per value (``make_cfg(sweep_group, value)`` builds each config) as one
    sweep group, each repeated over its seeds (``training.seeds``: one seed group per
    value); returns the sweep's name and the run folders. ``backend="slurm"``: one job
    array on the cluster (docs/slurm.md)."""
    group = sweep_name(name)
    return group, submit_configs(sweep_configs(make_cfg, values, group, root), root, backend)


def queued_text(dirs: list[Path], cfgs: list[TrainConfig] | None = None) -> str:
    """What a launch queued, in words (plain text)."""
    if len(dirs) == 1:
        return f"Queued run {dirs[0].name}."
    from sga_core.runs.folder import RunFolder

    first = cfgs[0] if cfgs else RunFolder(dirs[0]).config()
    return (f"Queued {len(dirs)} runs, seeds {first.training.seeds}, as group {first.group}: "
            + ", ".join(d.name for d in dirs) + ".")
