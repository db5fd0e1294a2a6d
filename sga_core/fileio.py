"""Atomic file writes, JSON Lines helpers and the one YAML reader.

Every write of user data goes through a temporary file in the same folder followed by
``os.replace``, so a crash or a full disk never leaves a half-written file behind
(docs/spec.md#7-engineering-rules, docs/decisions/001-run-folder-is-the-contract.md).

Every YAML read in the workbench goes through :func:`load_yaml`: a safe loader that
bounds the document's expanded size before anything is built from it. YAML aliases share
one node, so a 600-byte file of nested aliases (``&a [x, x]`` then ``&b [*a, *a]`` ...)
parses into a small graph that stands for a billion values; whatever walks the result
(validation, a copy, a dump) then runs for minutes and fills memory. The loader counts the
expanded size of the composed node graph (each node once, an alias as the size of what it
names) and refuses a document past :data:`MAX_YAML_VALUES` before constructing it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from sga_core.params import ConfigError


def now_iso() -> str:
    """The current UTC time as ISO-8601, e.g. ``2026-11-21T21:30:00Z`` (every timestamp the
    workbench writes)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; parent folders are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():  # else os.replace fails naming the temporary file, not this one
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; keep the existing file's mode, else the usual 0644
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def finite_json(obj: Any) -> Any:
    """Replace NaN and infinities (not valid JSON) by None, recursively."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj


#: JSON has no NaN or infinity. A log that must tell a non-finite value (a diverged step)
#: from one not logged (null) writes it as one of these strings (metrics.jsonl:
#: docs/spec.md#5-the-run-directory); its checked reader turns them back into floats.
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def non_finite_as_text(obj: Any) -> Any:
    """NaN and infinities as the strings of :data:`NON_FINITE`, recursively (None stays
    None: not logged)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return "NaN" if obj != obj else ("Infinity" if obj > 0 else "-Infinity")
    if isinstance(obj, dict):
        return {k: non_finite_as_text(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [non_finite_as_text(v) for v in obj]
    return obj


def is_non_finite_text(value: Any) -> bool:
    """Whether ``value`` is one of the strings :func:`non_finite_as_text` writes."""
    return isinstance(value, str) and value in NON_FINITE


# Characters that json.dumps(ensure_ascii=False) leaves raw but that break a reader: U+0085,
# U+2028 and U+2029 end a line for str.splitlines() (and for many editors), and a lone
# surrogate cannot be encoded as UTF-8 at all. Inside a JSON string they are written as
# \\uXXXX escapes, which every JSON reader turns back into the same character.
_UNSAFE = re.compile("[\u0085\u2028\u2029\ud800-\udfff]")


def _escape_unsafe(text: str) -> str:
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def dumps_line(obj: Any) -> str:
    """One JSON Lines record as the workbench writes it (the one dialect every file shares):
    readable UTF-8 (``ensure_ascii=False``) except the characters above, escaped, so it is a
    single physical line whatever text ``obj`` holds."""
    return _escape_unsafe(json.dumps(obj, ensure_ascii=False)) + "\n"


def atomic_write_json(path: str | os.PathLike, obj: Any, indent: int = 2) -> Path:
    text = _escape_unsafe(json.dumps(finite_json(obj), indent=indent, ensure_ascii=False,
                                     allow_nan=False))
    return atomic_write_text(path, text + "\n")


def dumps_jsonl(rows: Iterable[Any]) -> str:
    """JSON Lines that :func:`read_jsonl` and the data loaders read back identically."""
    return "".join(dumps_line(r) for r in rows)


def atomic_write_jsonl(path: str | os.PathLike, rows: Iterable[Any]) -> Path:
    return atomic_write_text(path, dumps_jsonl(rows))


def append_jsonl(path: str | os.PathLike, obj: Any) -> None:
    """Append one record to a log-like JSONL file (metrics, probes).

    One ``write`` call per line, so readers never see a partial record except possibly the
    last line while it is being written; :func:`read_jsonl` skips such a trailing fragment.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = _escape_unsafe(json.dumps(finite_json(obj), ensure_ascii=False,
                                     allow_nan=False)) + "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()


def read_jsonl(path: str | os.PathLike, tolerate_partial_tail: bool = True) -> list[Any]:
    """Read a JSONL file, split on "\\n" only (a raw U+2028 inside a string is not a line
    break). A trailing line without a newline that does not parse (a record still being
    written by another process) is ignored when ``tolerate_partial_tail``."""
    path = Path(path)
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    rows = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            is_tail = i == len(lines) - 1
            if tolerate_partial_tail and is_tail:
                break
            raise
    return rows


def read_json(path: str | os.PathLike, default: Any = None) -> Any:
    path = Path(path)
    if not path.exists():
        return default
    return json.loads(path.read_text(encoding="utf-8"))


_HELD = threading.local()  # the file locks this thread holds: path -> depth


@contextlib.contextmanager
def file_lock(path: str | os.PathLike) -> Iterator[None]:
    """An exclusive lock between processes (``flock`` on ``path``, created if needed) for
    the block: a read-change-write that a background job and the UI may both do. The thread
    that holds it may take it again inside the block (a nested take is a no-op, where a
    second ``flock`` would wait for itself forever)."""
    path = Path(path)
    key = os.path.abspath(path)
    held = _HELD.__dict__.setdefault("depth", {})
    if held.get(key):
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        held[key] = 1
        try:
            yield
        finally:
            held.pop(key, None)
            fcntl.flock(fh, fcntl.LOCK_UN)


_DIR_LOCKS: dict[tuple[int, int], tuple[int, int]] = {}  # (dev, inode) -> (thread, depth)
_DIR_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def dir_lock(directory: str | os.PathLike) -> Iterator[None]:
    """An exclusive lock between processes on a folder itself (``flock`` on the folder, so
    no lock file is left in it), for a read-change-write of a file inside it. Re-entrant in
    the thread that holds it: a claim made under a run folder's lock may write that folder's
    status files, whose writes take the same lock."""
    fd = os.open(directory, os.O_RDONLY)
    st = os.fstat(fd)
    key, me = (st.st_dev, st.st_ino), threading.get_ident()
    with _DIR_LOCKS_GUARD:
        owner, depth = _DIR_LOCKS.get(key, (None, 0))
        if owner == me:
            _DIR_LOCKS[key] = (me, depth + 1)
    if owner == me:
        os.close(fd)
        try:
            yield
        finally:
            with _DIR_LOCKS_GUARD:
                _DIR_LOCKS[key] = (me, _DIR_LOCKS[key][1] - 1)
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with _DIR_LOCKS_GUARD:
            _DIR_LOCKS[key] = (me, 1)
        try:
            yield
        finally:
            with _DIR_LOCKS_GUARD:
                _DIR_LOCKS.pop(key, None)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where the
    system or the filesystem cannot."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def replace_dir(new: str | os.PathLike, target: str | os.PathLike) -> None:
    """Put the folder ``new`` in ``target``'s place so that a reader of ``target`` always
    finds the old folder or the new one, never none: swapped in one step where the system
    can, else the old folder is first moved aside to ``.<name>.old`` (a crash between the
    two renames leaves it there, and :func:`sga_core.runs.leftovers.clean_leftovers` puts it
    back); the old folder is then removed."""
    import shutil

    new, target = Path(new), Path(target)
    if target.is_dir() and not target.is_symlink() and _exchange(new, target):
        shutil.rmtree(new, ignore_errors=True)  # it holds the old folder now
        return
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if os.path.lexists(target):
        os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        if os.path.lexists(old) and not os.path.lexists(target):
            os.replace(old, target)  # the old folder stays where it was
        raise
    shutil.rmtree(old, ignore_errors=True)


def remove_dir(target: str | os.PathLike) -> None:
    """Delete the folder ``target`` so that no reader ever finds it half-deleted, and a file
    that a late writer saves inside it meanwhile (a status written as its job ends: a
    ``.<name>.<random>.tmp`` renamed into place) is no error: the folder is moved aside in
    one step (``.deleting-<name>-<pid>``), then removed, a file that vanished on the way
    skipped and one that appeared removed by another pass. FileNotFoundError when
    ``target`` does not exist; a leftover of a killed delete goes with
    :func:`sga_core.runs.leftovers.clean_leftovers`."""
    import shutil

    target = Path(target)
    aside = target.with_name(f".deleting-{target.name}-{os.getpid()}")
    os.replace(target, aside)

    def vanished_is_fine(func, path, exc_info):
        if not isinstance(exc_info[1], FileNotFoundError):
            raise exc_info[1]

    for _ in range(5):
        try:
            shutil.rmtree(aside, onerror=vanished_is_fine)
        except OSError:  # a file added after a folder was listed: not empty, once more
            pass
        if not os.path.lexists(aside):
            return
    shutil.rmtree(aside)  # still there after 5 passes: say why


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike) -> Iterator[Path]:
    """Build a folder beside ``target`` (``.<name>.tmp``, created empty) and put it in
    ``target``'s place (:func:`replace_dir`: a reader finds the old folder or the new one,
    never none) only when the block ends without an error; otherwise the half-built folder
    is removed and ``target`` is left as it was."""
    import shutil

    target = Path(target)
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
        replace_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# --- YAML, bounded -----------------------------------------------------------------------------

MAX_YAML_VALUES = 100_000  # scalars, lists and mappings once aliases are expanded


class YAMLTooLarge(ConfigError, yaml.YAMLError):
    """A YAML document whose aliases expand past :data:`MAX_YAML_VALUES` values."""


def expanded_size(node: yaml.Node, limit: int = MAX_YAML_VALUES) -> int:
    """The number of values ``node`` stands for with aliases expanded, computed over the
    shared graph (each node visited once) and stopping as soon as it passes ``limit``."""
    sizes: dict[int, int] = {}
    # the collections being expanded (each one's children still open): an alias to one of
    # them from inside it ('&a [*a]') stands for a value without end
    open_ids: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(node, False)]
    while stack:
        current, children_done = stack.pop()
        if id(current) in sizes:
            continue
        if isinstance(current, yaml.ScalarNode):
            sizes[id(current)] = 1
            continue
        children = (current.value if isinstance(current, yaml.SequenceNode)
                    else [n for pair in current.value for n in pair])
        if not children_done:
            if id(current) in open_ids or any(id(c) in open_ids or c is current
                                               for c in children):
                return limit + 1  # it contains itself
            open_ids.add(id(current))
            stack.append((current, True))
            stack.extend((c, False) for c in children if id(c) not in sizes)
            continue
        open_ids.discard(id(current))
        total = 1
        for child in children:
            total += sizes.get(id(child), 0)
            if total > limit:
                return total
        sizes[id(current)] = total
    return sizes[id(node)]


def _bounded(base: type) -> type:
    class Bounded(base):
        limit = MAX_YAML_VALUES
        source = "YAML"

        def construct_document(self, node):
            if expanded_size(node, self.limit) > self.limit:
                raise YAMLTooLarge(
                    f"{self.source}: the YAML expands to more than {self.limit:,} values "
                    "(aliases '*name' repeat what '&name' marks): write the values out")
            return super().construct_document(node)

    Bounded.__name__ = Bounded.__qualname__ = f"Bounded{base.__name__}"
    return Bounded


BoundedSafeLoader = _bounded(yaml.SafeLoader)
BoundedCSafeLoader = _bounded(getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_yaml(text: str | bytes, source: str = "YAML", *, fast: bool = False):
    """``yaml.safe_load`` with the expanded size bounded; ``source`` (a file's base name)
    starts the :class:`YAMLTooLarge` message. ``fast`` uses libyaml's parser when present."""
    loader = (BoundedCSafeLoader if fast else BoundedSafeLoader)(text)
    loader.source = source
    try:
        return loader.get_single_data()
    except RecursionError:  # the pure-Python parser nests a call per level
        raise YAMLTooLarge(f"{source}: the YAML is nested too deeply") from None
    finally:
        loader.dispose()
