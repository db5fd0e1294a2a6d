"""Which tests share a pytest-xdist worker (``make test``: ``pytest -n 2 --dist loadgroup``).

pytest-xdist 3.8 groups tests by an ``@group`` suffix it writes into ``item._nodeid``; pytest
9.2 reads a test's id from elsewhere (``item._id``), so the suffix never reaches the
controller and every group silently falls apart (two SLURM clusters on one node, a module's
trained run built in both workers). This module does the grouping without that suffix:

- each worker computes every test's group at collection (:func:`group_of`) and writes the
  groups to a file of its own in a folder the controller made (:func:`write_groups`);
- the controller's scheduler (:class:`GroupScheduling`, a ``LoadScopeScheduling``) reads
  those files when it splits the collection into work units: one unit per group, one per
  ungrouped test. xdist calls it only once every worker has sent its collection, so every
  worker's file is complete by then.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

#: The group of every test that uses the session's SLURM cluster (``slurm_cluster``).
SLURM_GROUP = "slurm"

#: The environment variable naming the folder of the workers' group files.
ENV = "SGA_XDIST_GROUPS"


def group_of(item) -> str | None:
    """The group a test runs in, or None (any worker).

    - An ``xdist_group`` mark the test carries itself: its name.
    - A test of the SLURM cluster (``slurm_cluster``, also through ``slurm``): ``slurm``.
      One cluster serves the session; started once per worker it would be two clusters on
      one node, each cancelling its jobs as root, and twice the daemons on the cores.
    - A test that uses a module- or class-scoped fixture: its module, so that what the module
      builds once (a trained run, an evaluation) is built once, not once per worker."""
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    if "slurm_cluster" in item.fixturenames:
        return SLURM_GROUP
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    if any(d.scope in ("module", "class") for fixdefs in defs.values() for d in fixdefs):
        return item.nodeid.split("::", 1)[0]
    return None


def is_grouping_controller(config) -> bool:
    """True in the controller of a ``-n N --dist loadgroup`` run (not in a worker)."""
    return (not hasattr(config, "workerinput")
            and bool(getattr(config.option, "numprocesses", None))
            and getattr(config.option, "dist", "no") == "loadgroup")


def start(config) -> None:
    """The controller makes the folder the workers write their groups to (before the
    workers start: they inherit the environment)."""
    if is_grouping_controller(config):
        folder = tempfile.mkdtemp(prefix="sga-xdist-groups-")
        os.environ[ENV] = folder
        config._sga_xdist_groups = folder


def finish(config) -> None:
    folder = getattr(config, "_sga_xdist_groups", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(ENV, None)


def write_groups(config, items) -> None:
    """A worker writes ``{test id: group}`` for its grouped tests, whole or not at all."""
    folder = os.environ.get(ENV)
    workerinput = getattr(config, "workerinput", None)
    if not folder or workerinput is None:
        return
    groups = {item.nodeid: g for item in items if (g := group_of(item)) is not None}
    target = Path(folder) / f"{workerinput['workerid']}.json"
    part = target.with_suffix(".part")
    part.write_text(json.dumps(groups), encoding="utf-8")
    os.replace(part, target)


def read_groups(folder: str | os.PathLike) -> dict[str, str]:
    """Every worker's groups, merged (the workers collect the same tests)."""
    merged: dict[str, str] = {}
    for f in sorted(Path(folder).glob("*.json")):
        merged.update(json.loads(f.read_text(encoding="utf-8")))
    return merged


def claim(name: str) -> str | None:
    """Say that this worker holds what only one worker may (the SLURM cluster). Returns None,
    or the worker that claimed it first: then the grouping failed, and the caller stops."""
    folder, me = os.environ.get(ENV), os.environ.get("PYTEST_XDIST_WORKER")
    if not folder or not me:
        return None
    path = Path(folder) / f"{name}.claim"
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        owner = path.read_text(encoding="utf-8")  # empty: another worker is writing it
        return None if owner == me else owner or "another worker"
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(me)
    return None


def make_scheduler(config, log):
    """The controller's scheduler for ``--dist loadgroup``: xdist's own, splitting the
    collection by the workers' group files rather than by an id suffix."""
    from xdist.scheduler import LoadGroupScheduling

    folder = getattr(config, "_sga_xdist_groups", None)

    class GroupScheduling(LoadGroupScheduling):
        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                self._groups = read_groups(folder) if folder else {}
            group = self._groups.get(nodeid)
            return group if group is not None else super()._split_scope(nodeid)

    return GroupScheduling(config, log)
