"""``cluster show|set|preview``: the workspace's cluster profile (docs/slurm.md), the batch
script a run would get, and whether SLURM is offered on this machine."""

from __future__ import annotations

import argparse

from sga_core.cli.flags import _add_flag, _flag, help_escaped
from sga_core.params import field_specs


def cmd_cluster(args) -> int:
    import yaml

    from sga_core.params import to_dict
    from sga_core.runs.slurm import client
    from sga_core.runs.slurm.profile import load_profile, profile_path, save_profile, updated
    from sga_core.runs.slurm.script import run_script

    profile = load_profile(args.workspace)
    if args.action == "set":
        changes = {k[len("profile."):]: v for k, v in vars(args).items()
                   if k.startswith("profile.") and v is not None}
        for key in ("extra_sbatch", "setup"):
            if getattr(args, f"clear_{key}"):
                changes[key] = []
        profile = updated(profile, changes)
        print(f"saved {save_profile(profile, args.workspace)}")
    if args.action == "preview":
        from sga_core.runs.folder import runs_root

        print(run_script(profile, runs_root(args.runs_dir) / "RUN_ID"), end="")
        return 0
    print(f"# {profile_path(args.workspace)}")
    print(yaml.safe_dump(to_dict(profile), sort_keys=False), end="")
    why = client.unavailable()
    print(f"# SLURM: {'not offered: ' + why if why else 'available (sbatch on PATH)'}")
    return 0


def add_parsers(sub, argv: list[str] | None = None) -> None:
    """Add this module's commands to the subparsers ``sub``."""
    from sga_core.runs.slurm.profile import ClusterProfile

    s = sub.add_parser("cluster", help="the SLURM cluster profile of the workspace",
                       description="Show or change the cluster profile (workspace/"
                                   "cluster.yaml), or preview the batch script of a run.")
    s.add_argument("action", choices=["show", "set", "preview"])
    s.add_argument("--workspace", help="projects folder (default $SGA_WORKSPACE or "
                                       "./workspace)")
    s.add_argument("--runs-dir", help="runs folder (default $SGA_RUNS_DIR or ./runs)")
    for spec in field_specs(ClusterProfile):
        help_text = f"{spec.get('help') or ''} (default: {spec['default']!r})"
        if spec["kind"] == "list":
            s.add_argument(_flag(spec["name"]), dest=f"profile.{spec['name']}",
                           action="append", metavar="LINE", default=None,
                           help=help_escaped(help_text) +
                           "; repeatable, replaces the saved lines")
            s.add_argument(_flag(f"clear_{spec['name']}"), action="store_true",
                           help=f"remove every {spec['name'].replace('_', ' ')} line")
        else:
            _add_flag(s, _flag(spec["name"]), f"profile.{spec['name']}", [spec], help_text)
    s.set_defaults(func=cmd_cluster)


__all__ = ["add_parsers", "argparse"]
