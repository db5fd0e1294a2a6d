"""Named projects on disk: ``workspace/<project>/`` holds the chosen data, the normal-answer
table with its version history, review marks and analysis results, so a reload or a server
restart shows everything again. Every write is atomic.

    project.json          name, kind (qa/text), sources, K, timestamps
    forget.jsonl          validated forget rows
    retain.jsonl          validated retain rows
    eval/*.jsonl          extra evaluation sets (real-world utility sets, holdout texts)
    normals.jsonl         the current normal-answer table
    normals_history/      earlier versions of the table (restorable)
    review.json           forget rows marked as reviewed
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from sga_core.data import (
    MAX_K,
    DataError,
    Dataset,
    NormalTable,
    file_rows_hash,
    load_dataset,
    rows_hash,
    write_dataset,
)
from sga_core.fileio import atomic_write_json, file_lock, now_iso, read_json

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
HISTORY_KEEP = 100
NORMALS_LOCK = ".normals.lock"


class ProjectError(ValueError):
    """A project that cannot be created or loaded; the message says why."""


def workspace_root(path: str | os.PathLike | None = None) -> Path:
    return Path(path or os.environ.get("SGA_WORKSPACE") or "workspace").resolve()


def list_projects(root=None) -> list[str]:
    root = workspace_root(root)
    if not root.exists():
        return []
    return sorted(d.name for d in root.iterdir()
                  if d.is_dir() and (d / "project.json").exists())


def check_name(name: str) -> str:
    name = (name or "").strip()
    if not NAME_RE.match(name):
        raise ProjectError(f"project name {name!r}: use 1-64 lower-case letters, digits, '-' "
                           "or '_', starting with a letter or digit")
    return name


@dataclass
class Project:
    name: str
    path: Path

    @property
    def meta(self) -> dict:
        return read_json(self.path / "project.json", default={}) or {}

    @property
    def kind(self) -> str:
        return self.meta.get("kind", "qa")

    @property
    def k(self) -> int:
        return int(self.meta.get("k", 4))

    def update_meta(self, **fields) -> dict:
        meta = {**self.meta, **fields, "updated_at": now_iso()}
        atomic_write_json(self.path / "project.json", meta)
        return meta

    @property
    def forget_hash(self) -> str | None:
        """The content hash of the forget rows (``sga_core.data.rows_hash``): runs with the same
        hash trained on the same rows and compare (stored at creation)."""
        return self.meta.get("forget_rows_hash") or file_rows_hash(self.forget_path, self.kind)

    @property
    def forget_path(self) -> Path:
        return self.path / "forget.jsonl"

    @property
    def retain_path(self) -> Path:
        return self.path / "retain.jsonl"

    @property
    def normals_path(self) -> Path:
        return self.path / "normals.jsonl"

    def forget(self) -> list[dict]:
        return load_dataset(self.forget_path, kind=self.kind).rows

    def retain(self) -> list[dict]:
        return load_dataset(self.retain_path, kind=self.kind).rows if \
            self.retain_path.exists() else []

    def eval_sets(self) -> dict[str, Path]:
        d = self.path / "eval"
        return {p.stem: p for p in sorted(d.glob("*.jsonl"))} if d.exists() else {}

    # -- normal answers ------------------------------------------------------------------
    def normals(self) -> NormalTable | None:
        if not self.normals_path.exists():
            return None
        return NormalTable.load(self.normals_path, k=self.k)

    def import_normals(self, path: str | os.PathLike, k: int | None = None,
                       name: str | None = None) -> NormalTable:
        """Import a normal-answer file as the current table (a new version; the table before
        stays in the history). Every ``k`` must be within 1..K-1 of ``k`` (default: the
        project's K; at most ``MAX_K``) and every ``forget_index`` must name a row of the
        forget set; a bad file raises DataError (file, row, field) and changes nothing.
        ``name`` is the file name shown in the version's reason (an upload's own name)."""
        table = NormalTable.load(path, k=self.k if k is None else k,
                                 num_forget=len(self.forget()))
        self.save_normals(table, reason=f"import {name or Path(path).name}")
        return table

    def save_normals(self, table: NormalTable, reason: str = "edit") -> Path:
        """Save the table as the current one and as a new version in the history."""
        with file_lock(self.path / NORMALS_LOCK):
            return self._save_normals(table, reason)

    def update_normals(self, change, reason: str) -> tuple[NormalTable, Path]:
        """Read the current table (None if there is none), ``change`` it, save the result:
        one locked step, so a generation job and an edit in the page never undo each other."""
        with file_lock(self.path / NORMALS_LOCK):
            table = change(self.normals())
            return table, self._save_normals(table, reason)

    def _save_normals(self, table: NormalTable, reason: str) -> Path:
        hist = self.path / "normals_history"
        hist.mkdir(exist_ok=True)
        stamp = now_iso().replace(":", "").replace("-", "")
        slug = re.sub(r"[^a-z0-9]+", "-", reason.lower()).strip("-")[:40] or "edit"
        numbers = [int(m.group(1)) for v in self.history()
                   if (m := re.match(r"(\d+)-", v.name))]
        n = max(numbers, default=0)
        version = hist / f"{n + 1:05d}-{stamp}-{slug}.jsonl"
        table.save(version)
        table.save(self.normals_path)
        if table.k != self.k:
            self.update_meta(k=table.k)
        for old in sorted(hist.glob("*.jsonl"))[:-HISTORY_KEEP]:
            old.unlink()
        return version

    def history(self) -> list[Path]:
        """Saved versions, newest first."""
        hist = self.path / "normals_history"
        return sorted(hist.glob("*.jsonl"), reverse=True) if hist.exists() else []

    def restore(self, version: str | Path) -> NormalTable:
        path = self.path / "normals_history" / Path(version).name
        if not path.exists():
            raise ProjectError(f"no saved version {Path(version).name!r}")
        table = NormalTable.load(path)
        self.save_normals(table, reason=f"restore {path.stem[:5]}")
        return table

    # -- review marks ----------------------------------------------------------------------
    def reviewed(self) -> set[int]:
        return set(read_json(self.path / "review.json", default={}).get("reviewed", []))

    def set_reviewed(self, indices, reviewed: bool = True) -> set[int]:
        cur = self.reviewed()
        cur = cur | set(indices) if reviewed else cur - set(indices)
        atomic_write_json(self.path / "review.json", {"reviewed": sorted(cur)})
        return cur


def load_project(name: str, root=None) -> Project:
    path = workspace_root(root) / check_name(name)
    if not (path / "project.json").exists():
        raise ProjectError(f"no project named {name!r} in {path.parent}")
    return Project(name, path)


def create_project(name: str, forget: str | os.PathLike, retain: str | os.PathLike | None = None,
                   kind: str = "auto", k: int = 4, root=None, overwrite: bool = False,
                   eval_sets: dict[str, str | os.PathLike] | None = None,
                   sources: dict[str, str] | None = None) -> Project:
    """Validate the files and create the project in one step: a bad file raises
    :class:`~sga_core.data.DataError` (file, row, field) and nothing is written."""
    name = check_name(name)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ProjectError(f"K={k!r}: K must be an integer from 1 to {MAX_K}")
    root = workspace_root(root)
    final = root / name
    if final.exists() and not overwrite:
        raise ProjectError(f"a project named {name!r} already exists")
    f_ds: Dataset = load_dataset(forget, kind=kind)
    r_ds = load_dataset(retain) if retain else None
    if r_ds is not None and r_ds.kind != f_ds.kind:
        raise DataError(f"retain data is {r_ds.kind} but forget data is {f_ds.kind}",
                        file=Path(retain).name)
    evals = {n: load_dataset(p) for n, p in (eval_sets or {}).items()}
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".creating-{name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        write_dataset(tmp / "forget.jsonl", f_ds.rows)
        if r_ds is not None:
            write_dataset(tmp / "retain.jsonl", r_ds.rows)
        for n, ds in evals.items():
            write_dataset(tmp / "eval" / f"{n}.jsonl", ds.rows)
        src = sources or {}
        atomic_write_json(tmp / "project.json", {
            "name": name, "kind": f_ds.kind, "k": int(k), "created_at": now_iso(),
            "updated_at": now_iso(),
            "forget_source": src.get("forget", Path(forget).name),
            "retain_source": src.get("retain", Path(retain).name if retain else None),
            "n_forget": len(f_ds), "n_retain": len(r_ds) if r_ds else 0,
            "forget_rows_hash": rows_hash(f_ds.rows),
        })
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Project(name, final)


def create_demo_project(name: str = "demo", root=None, overwrite: bool = False) -> Project:
    """The built-in demo: fictitious authors (QA), with the two real-world utility sets."""
    from sga_core.assets import DEMO_DIR as demo

    return create_project(name, demo / "forget.jsonl", demo / "retain.jsonl", kind="qa",
                          root=root, overwrite=overwrite,
                          eval_sets={"real_authors": demo / "real_authors.jsonl",
                                     "world_facts": demo / "world_facts.jsonl"})
