"""Every temporary name the workbench makes, in one place, and removing what a killed process
left behind of them.

Beside what is being written (in a workspace or a runs folder; :data:`IN_PLACE`):

- ``.creating-<name>-<pid>/`` a project or run being created (``projects.create_project``,
  ``runs.create.create_run``), directly in a root;
- ``.<name>.<random>.tmp`` a file being saved (``fileio.atomic_write_bytes``) and
  ``.<name>.tmp`` a run's data snapshot being copied, or a folder being built
  (``fileio.atomic_dir``: a model being saved, ``RUN/.model.tmp/``);
- ``.<name>.old/`` the folder ``fileio.atomic_dir`` replaces, moved aside for a moment where
  folders cannot be swapped atomically: put back when ``<name>`` is missing (a crash between
  the two renames), else removed;
- ``.convert-<random>/`` a GGUF model being converted (``model.loading``);
- ``.deleting-<name>-<pid>/`` a folder being deleted, moved aside first
  (``fileio.remove_dir``: a deleted run).

In the system's temporary folder (:func:`temp_dir`, :data:`TEMP_KINDS`):
``sga-<kind>-<pid>-<random>/``, removed once process ``<pid>`` is gone (a killed ``train``
leaves its IDK normal answers in ``sga-normals-<pid>-*``).

Only what is older than a grace period goes from a root: a young one may belong to a
process that is still writing it. Call it at start-up::

    clean_leftovers(workspace_root(), runs_root()); clean_temp_leftovers()
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

#: Leftovers younger than this (seconds since their last change) are never touched.
GRACE_S = 3600.0
#: A ``.<name>.old`` folder whose ``<name>`` is missing is put back once it was moved aside
#: this long ago (the moment between the two renames of ``fileio.atomic_dir`` is over).
RESTORE_AFTER_S = 60.0
#: How deep below a root temporary files are looked for (runs/<id>/eval/x is depth 3).
MAX_DEPTH = 4

#: The temporary names made beside what is written, by what they are.
IN_PLACE = {
    "creating": re.compile(r"\.creating-.+-\d+"),
    "tmp": re.compile(r"\..+\.tmp"),
    "old": re.compile(r"\..+\.old"),
    "convert": re.compile(r"\.convert-[A-Za-z0-9_]+"),
    "deleting": re.compile(r"\.deleting-.+-\d+"),
}
#: Hidden names that are not leftovers: lock files (``fileio.file_lock``) stay, they guard a
#: read-change-write and hold no data.
KEPT = re.compile(r"\..+\.lock")
#: The kinds of folder made in the system's temporary folder (:func:`temp_dir`).
TEMP_KINDS = ("normals", "book", "hub", "shards", "upload")
_TEMP = re.compile(rf"sga-({'|'.join(TEMP_KINDS)})-(\d+)-.+")


def temp_prefix(kind: str) -> str:
    """The name prefix of a system temporary folder of ``kind`` made by this process."""
    if kind not in TEMP_KINDS:
        raise ValueError(f"unknown temporary folder kind {kind!r}: add it to TEMP_KINDS")
    return f"sga-{kind}-{os.getpid()}-"


def temp_dir(kind: str) -> tempfile.TemporaryDirectory:
    """A system temporary folder that :func:`clean_temp_leftovers` removes once this
    process is gone, should it be killed before removing it itself."""
    return tempfile.TemporaryDirectory(prefix=temp_prefix(kind))


def make_temp_dir(kind: str) -> Path:
    """A lasting system temporary folder (``mkdtemp``), removed once this process is gone."""
    return Path(tempfile.mkdtemp(prefix=temp_prefix(kind)))


def leftover_kind(name: str) -> str | None:
    """Which temporary name (:data:`IN_PLACE`, or ``"temp"``) ``name`` is, if any."""
    for kind, pattern in IN_PLACE.items():
        if pattern.fullmatch(name):
            return kind
    return "temp" if _TEMP.fullmatch(name) else None


def _newest_change(path: Path) -> float:
    """The latest modification time of a folder and everything in it (a process that is
    still writing a file inside keeps it young). A folder gone already (its owner finished,
    another cleaner took it) is the youngest of all: nothing to remove."""
    try:
        newest = path.lstat().st_mtime
    except OSError:
        return float("inf")
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                newest = max(newest, os.lstat(os.path.join(folder, name)).st_mtime)
            except OSError:
                pass
    return newest


def _remove(path: Path) -> bool:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    except OSError:
        return False
    return not os.path.lexists(path)


def _old_folder(path: Path, cutoff: float, now: float) -> Path | None:
    """Handle a ``.<name>.old`` folder: put it back as ``<name>`` when that is missing,
    remove it once ``<name>`` exists and it is past the grace period. Returns what was
    restored or removed."""
    target = path.with_name(path.name[1:-len(".old")])
    if not os.path.lexists(target):
        if path.lstat().st_ctime < now - RESTORE_AFTER_S:
            try:
                os.rename(path, target)
                return target
            except OSError:
                return None
        return None
    if _newest_change(path) < cutoff and path.lstat().st_ctime < cutoff:
        return path if _remove(path) else None
    return None


def _stale_in_place(root: Path, cutoff: float, now: float) -> list[Path]:
    out = []
    base = len(root.parts)
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        deep = len(here.parts) - base >= MAX_DEPTH
        keep = []
        for name in dirs:
            path = here / name
            kind = leftover_kind(name)
            if path.is_symlink() or kind is None or kind == "temp":
                if not deep and kind is None:
                    keep.append(name)
                continue
            if kind == "creating":
                if here == root and _newest_change(path) < cutoff and _remove(path):
                    out.append(path)
            elif kind == "old":
                done = _old_folder(path, cutoff, now)
                if done is not None:
                    out.append(done)
            elif _newest_change(path) < cutoff and _remove(path):
                out.append(path)
        dirs[:] = keep
        for name in files:
            path = here / name
            if IN_PLACE["tmp"].fullmatch(name):
                try:
                    st = path.lstat()
                except OSError:
                    continue
                if path.is_file() and not path.is_symlink() and st.st_mtime < cutoff \
                        and _remove(path):
                    out.append(path)
    return out


def clean_leftovers(*roots: str | os.PathLike, grace_s: float = GRACE_S,
                    now: float | None = None) -> list[Path]:
    """Remove the ``.creating-*`` folders directly in each root (a workspace, a runs folder)
    and the other :data:`IN_PLACE` leftovers below it (up to ``MAX_DEPTH`` levels) that
    nothing has changed for ``grace_s`` seconds; a ``.<name>.old`` folder whose ``<name>``
    is missing is put back instead. Missing roots are skipped, symbolic links never
    followed, and a leftover that cannot be removed is left alone. Returns what was removed
    (or restored)."""
    now = time.time() if now is None else now
    cutoff = now - grace_s
    removed: list[Path] = []
    for root in roots:
        root = Path(root)
        if root.is_dir():
            removed += _stale_in_place(root, cutoff, now)
    return removed


def clean_temp_leftovers(folder: str | os.PathLike | None = None) -> list[Path]:
    """Remove the ``sga-<kind>-<pid>-*`` folders (:func:`temp_dir`) of this user in the
    system's temporary folder (or ``folder``) whose process ``<pid>`` is gone."""
    from sga_core.runs.procs import pid_alive

    folder = Path(folder or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP.fullmatch(entry.name)
        if not match or entry.is_symlink():
            continue
        try:
            if entry.lstat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        if int(match.group(2)) != os.getpid() and not pid_alive(int(match.group(2))) \
                and _remove(entry):
            removed.append(entry)
    return removed
