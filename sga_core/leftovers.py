"""Removing what a killed process left behind: ``.creating-<name>-<pid>/`` folders (a project
or run being created, see ``projects.create_project`` and ``runs.folder.create_run``) and
``.<name>.<random>.tmp`` files (a save in progress, ``fileio.atomic_write_bytes``; also
``.<name>.tmp`` from the run data snapshot). Only what is older than a grace period goes: a
young one may belong to a process that is still writing it. Call it at start-up::

    clean_leftovers(workspace_root(), runs_root())
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

#: Leftovers younger than this (seconds since their last change) are never touched.
GRACE_S = 3600.0
#: How deep below a root temporary files are looked for (runs/<id>/eval/x is depth 3).
MAX_DEPTH = 4

_CREATING = re.compile(r"\.creating-.+-\d+")
_TMP = re.compile(r"\..+\.tmp")


def _newest_change(path: Path) -> float:
    """The latest modification time of a folder and everything in it (a process that is
    still writing a file inside keeps it young)."""
    newest = path.lstat().st_mtime
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                newest = max(newest, os.lstat(os.path.join(folder, name)).st_mtime)
            except OSError:
                pass
    return newest


def _stale_tmp_files(root: Path, cutoff: float) -> list[Path]:
    out = []
    base = len(root.parts)
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        if len(here.parts) - base >= MAX_DEPTH:
            dirs[:] = []
        dirs[:] = [d for d in dirs if not _CREATING.fullmatch(d)]
        for name in files:
            path = here / name
            if _TMP.fullmatch(name):
                try:
                    st = path.lstat()
                except OSError:
                    continue
                if path.is_file() and not path.is_symlink() and st.st_mtime < cutoff:
                    out.append(path)
    return out


def clean_leftovers(*roots: str | os.PathLike, grace_s: float = GRACE_S,
                    now: float | None = None) -> list[Path]:
    """Remove the ``.creating-*`` folders directly in each root (a workspace, a runs folder)
    and the ``.*.tmp`` files below it (up to ``MAX_DEPTH`` levels) that nothing has changed
    for ``grace_s`` seconds. Missing roots are skipped, symbolic links never followed, and a
    leftover that cannot be removed is left alone. Returns what was removed."""
    cutoff = (time.time() if now is None else now) - grace_s
    removed: list[Path] = []
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            continue
        for entry in sorted(root.iterdir()):
            if (_CREATING.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink()
                    and _newest_change(entry) < cutoff):
                shutil.rmtree(entry, ignore_errors=True)
                if not entry.exists():
                    removed.append(entry)
        for path in _stale_tmp_files(root, cutoff):
            try:
                path.unlink()
                removed.append(path)
            except OSError:
                pass
    return removed
