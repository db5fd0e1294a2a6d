"""Named projects on disk: ``workspace/<project>/`` holds the chosen data, the normal-answer
table with its version history, review marks and analysis results, so a reload or a server
restart shows everything again. Every write is atomic.

    project.json          name, kind (qa/text), sources, K, timestamps, the field mapping
                          of each imported file (field_maps), evaluation set sources
    forget.jsonl          validated forget rows (fields renamed by the mapping, if any)
    retain.jsonl          validated retain rows
    eval/*.jsonl          extra evaluation sets (utility sets for MU, holdout texts, ...;
                          their roles: sga_core.projects.eval_sets)
    parts/<study>/*.jsonl further forget sets: MUSE's scal / sust forget_1..4 (a study's
                          requests, sga_core.projects.study)
    studies/*.json        the studies launched (their runs, in request order)
    normals.jsonl         the current normal-answer table
    normals_history/      earlier versions of the table (restorable)
    review.json           forget rows marked as reviewed

Where projects are and how one is found by name: :mod:`sga_core.projects.listing`; how one
is created or replaced: :mod:`sga_core.projects.create`; the built-in demo:
:mod:`sga_core.projects.demo`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sga_core.data import DataError, NormalTable, file_rows_hash, load_dataset, write_dataset
from sga_core.fileio import atomic_write_json, file_lock, now_iso, read_json

HISTORY_KEEP = 100
PARTS_DIR = "parts"
NORMALS_LOCK = ".normals.lock"


class ProjectError(ValueError):
    """A project that cannot be created or loaded; the message says why."""


def read_meta(name: str, path: Path) -> dict:
    """A project's project.json as a mapping ({} when it is absent); a file that cannot be
    read, is not a mapping, or holds a kind or K no page can use raises ProjectError."""
    def damaged(why: str) -> ProjectError:
        return ProjectError(f"project {name!r} is damaged: project.json {why}")

    try:
        data = read_json(path, default={})
    except UnicodeDecodeError as exc:
        raise damaged(f"is not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:
        raise damaged(f"is not valid JSON ({exc})") from None
    except RecursionError:
        raise damaged("is nested too deeply") from None
    except OSError as exc:
        raise damaged(f"cannot be read ({exc.strerror or exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise damaged(f"must hold an object, got {type(data).__name__}")
    if "kind" in data and data["kind"] not in ("qa", "text"):
        raise damaged(f"kind must be 'qa' or 'text', got {str(data['kind'])[:40]!r}")
    k = data.get("k", 4)
    if isinstance(k, bool) or not isinstance(k, (int, float)) or k != k or \
            k in (float("inf"), float("-inf")) or int(k) != k or k < 1:
        raise damaged(f"k must be a whole number of at least 1, got {str(k)[:40]!r}")
    return data


@dataclass
class Project:
    name: str
    path: Path

    @property
    def meta(self) -> dict:
        """project.json, checked: a damaged one is a :class:`ProjectError` naming the file
        and what is wrong (never a decode error or a wrong type deep inside a page)."""
        return read_meta(self.name, self.path / "project.json")

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
    def protocol(self) -> str:
        """The evaluation protocol the project's runs are evaluated under (a registered one;
        ``demo`` when none was chosen)."""
        return str(self.meta.get("protocol") or "demo")

    def set_protocol(self, name: str) -> str:
        """Choose the project's evaluation protocol (:data:`sga_core.protocols.PROTOCOLS`);
        ProjectError naming the known ones otherwise. New runs are evaluated under it; runs
        evaluated before keep their numbers until re-evaluated."""
        from sga_core.protocols import ProtocolError, get_protocol

        try:
            proto = get_protocol(name)
        except ProtocolError as exc:
            raise ProjectError(str(exc)) from None
        self.update_meta(protocol=proto.name)
        return proto.name

    @property
    def is_demo(self) -> bool:
        """Whether this project holds the built-in demo's forget data (whatever its name):
        the demo preset is meant for that data only."""
        from sga_core.assets import DEMO_DIR

        return bool(self.meta.get("demo")) or (
            self.kind == "qa" and self.forget_hash == file_rows_hash(DEMO_DIR / "forget.jsonl",
                                                                     "qa"))

    @property
    def sources(self) -> str:
        """Where its forget and retain data came from, each thing said once: "forget.jsonl
        (forget), retain.jsonl (retain)"; a benchmark's "/data/books: raw/forget.txt
        (forget), raw/retain2.json (retain)" (its source named once; "muse-bench/MUSE-Books:
        raw" for a project whose sources name the same config)."""
        forget = str(self.meta.get("forget_source") or "-")
        retain = self.meta.get("retain_source")
        if not retain or not self.retain_path.exists():
            return f"{forget} (forget; no retain data)"
        where, _, f_name = forget.rpartition(": ")
        r_where, _, r_name = str(retain).rpartition(": ")
        if where and where == r_where:
            return f"{where}: " + (f_name if f_name == r_name else
                                   f"{f_name} (forget), {r_name} (retain)")
        return f"{forget} (forget), {retain} (retain)"

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

    def data_warnings(self, forget: list[dict] | None = None,
                      retain: list[dict] | None = None) -> list[str]:
        """What in the rows would mislead a run or its scores without refusing the data:
        forget rows repeated or also in the retain set, VerbMem rows with nothing to
        continue (:mod:`sga_core.data.row_warnings`). ``forget`` / ``retain``: the rows when
        the caller has them already."""
        from sga_core.data.row_warnings import row_warnings
        from sga_core.projects.eval_sets import forget_overlap_warning

        sets = {name: load_dataset(path).rows for name, path in self.eval_sets().items()
                if name == "forget_eval"}
        forget = self.forget() if forget is None else forget
        out = row_warnings(self.kind, forget, self.retain() if retain is None else retain,
                           sets)
        if self.kind == "text" and sets.get("forget_eval"):
            overlap = forget_overlap_warning(sets["forget_eval"], forget)
            out += [overlap] if overlap else []
        return out

    def forget_parts(self, study: str | None = None) -> dict[str, Path]:
        """The further forget sets (``"sust/forget_1"`` -> file), in request order; only
        ``study``'s (``sust``, ``scal``) when given."""
        d = self.path / PARTS_DIR
        if not d.is_dir():
            return {}
        found = {f"{p.parent.name}/{p.stem}": p for p in d.glob("*/forget_*.jsonl")}

        def order(name: str):
            group, _, k = name.partition("/forget_")
            return group, int(k) if k.isdigit() else 0

        return {n: found[n] for n in sorted(found, key=order)
                if study is None or n.startswith(f"{study}/")}

    def eval_sets(self) -> dict[str, Path]:
        d = self.path / "eval"
        return {p.stem: p for p in sorted(d.glob("*.jsonl"))} if d.exists() else {}

    # -- field mapping and evaluation sets ---------------------------------------------------
    @property
    def field_maps(self) -> dict[str, dict[str, str]]:
        """The field mapping each file was imported with (role or set name -> mapping)."""
        maps = self.meta.get("field_maps")
        return maps if isinstance(maps, dict) else {}

    @property
    def field_map(self) -> dict[str, str]:
        """The mapping to offer for the project's next file: the last one used."""
        maps = self.field_maps
        return dict(maps.get("forget") or next((m for m in reversed(maps.values()) if m), {}))

    def eval_set_info(self) -> list[dict]:
        """Each extra evaluation set: name, rows, kind, role, what it is for, its source file
        and the field mapping it was imported with."""
        from sga_core.projects.eval_sets import set_summary

        sources = self.meta.get("eval_sources") or {}
        out = []
        for name, path in self.eval_sets().items():
            src = sources.get(name) or {}
            out.append({"name": name, **set_summary(self.kind, name, path, self.protocol),
                        "source": src.get("source") or path.name,
                        "field_map": self.field_maps.get(f"eval:{name}") or {}})
        return out

    def add_eval_set(self, name: str, path: str | os.PathLike,
                     field_map: dict[str, str] | None = None, source: str | None = None,
                     replace: bool = False, confirm_role: bool = False) -> dict:
        """Validate a data file as evaluation set ``name`` (like forget data, and for the kind
        the set's role needs) and save it; a bad file raises DataError and changes nothing.
        A name that gives the set a role (``forget_eval``, ``holdout``, ...) is refused with
        a ProjectError saying the role unless ``confirm_role``. Returns the set's entry of
        :meth:`eval_set_info` (with ``warning``: a forget_eval whose passages are not in the
        forget set)."""
        from sga_core.projects.eval_sets import (
            check_role_confirmed,
            check_set_name,
            forget_overlap_warning,
            load_set,
        )

        try:
            name = check_set_name(name)
            check_role_confirmed(self.kind, name, confirm_role, self.protocol)
        except ValueError as exc:
            raise ProjectError(str(exc)) from None
        target = self.path / "eval" / f"{name}.jsonl"
        if target.exists() and not replace:
            raise ProjectError(f"this project already has an evaluation set named {name!r}")
        ds = load_set(self.kind, name, path, field_map)
        write_dataset(target, ds.rows)
        sources = {**(self.meta.get("eval_sources") or {}),
                   name: {"source": source or Path(path).name, "added_at": now_iso()}}
        maps = {**self.field_maps, f"eval:{name}": dict(field_map or {})}
        self.update_meta(eval_sources=sources, field_maps=maps)
        entry = next(i for i in self.eval_set_info() if i["name"] == name)
        if self.kind == "text" and name == "forget_eval":
            entry["warning"] = forget_overlap_warning(ds.rows, self.forget(), name)
        return entry

    def remove_eval_set(self, name: str) -> None:
        path = self.eval_sets().get(name)
        if path is None:
            raise ProjectError(f"no evaluation set named {name!r}")
        path.unlink()
        sources = {k: v for k, v in (self.meta.get("eval_sources") or {}).items() if k != name}
        maps = {k: v for k, v in self.field_maps.items() if k != f"eval:{name}"}
        self.update_meta(eval_sources=sources, field_maps=maps)

    def starred_rows(self) -> list[int]:
        """Forget rows with a French-style fact (the ★ rows the Token probabilities page
        marks: the paper's Figure 3 example)."""
        return starred_rows(self.forget())

    def default_probe_rows(self, n: int = 3) -> list[int]:
        """The probe rows a new project starts from: its ★ rows, else its first rows."""
        return default_probe_rows(self.forget(), n)

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
        ``name`` is the file name shown in the version's reason (an upload's own name).
        A file holding no answers (empty, blank, a header alone, ``[]``) is refused: it
        would wipe the curated table."""
        table = NormalTable.load(path, k=self.k if k is None else k,
                                 num_forget=len(self.forget()))
        if not table.answers:
            raise DataError("holds no normal answers; the table was left as it was",
                            name or Path(path).name)
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
        """The rows marked reviewed; a damaged review.json (cut off, the wrong shape) marks
        none, and the next mark writes it afresh."""
        try:
            data = read_json(self.path / "review.json", default={})
        except (OSError, ValueError, RecursionError):
            return set()
        marks = data.get("reviewed") if isinstance(data, dict) else None
        if not isinstance(marks, list):
            return set()
        return {m for m in marks if type(m) is int and m >= 0}

    def set_reviewed(self, indices, reviewed: bool = True) -> set[int]:
        cur = self.reviewed()
        cur = cur | set(indices) if reviewed else cur - set(indices)
        atomic_write_json(self.path / "review.json", {"reviewed": sorted(cur)})
        return cur


STAR_WORD = "French"  # the demo's (and the paper's Figure 3) distinctive fact


def starred_rows(rows: list[dict]) -> list[int]:
    """Indices of rows whose answer (or continuation) mentions a French-style fact."""
    return [i for i, r in enumerate(rows)
            if STAR_WORD in str(r.get("answer") or r.get("continuation") or "")]


def default_probe_rows(rows: list[dict], n: int = 3) -> list[int]:
    """Up to ``n`` probe rows: the ★ rows (:func:`starred_rows`), else the first rows."""
    return starred_rows(rows)[:n] or list(range(min(n, len(rows))))


