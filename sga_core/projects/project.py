"""Named projects on disk: ``workspace/<project>/`` holds the chosen data, the normal-answer
table with its version history, review marks and analysis results, so a reload or a server
restart shows everything again. Every write is atomic.

    project.json          name, kind (qa/text), sources, K, timestamps, the field mapping
                          of each imported file (field_maps), evaluation set sources
    forget.jsonl          validated forget rows (fields renamed by the mapping, if any)
    retain.jsonl          validated retain rows
    eval/*.jsonl          extra evaluation sets (utility sets for MU, holdout texts, ...;
                          their roles: sga_core.projects.eval_sets)
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
from sga_core.fileio import atomic_write_json, file_lock, now_iso, read_json, replace_dir

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


def load_project(name: str, root=None) -> Project:
    path = workspace_root(root) / check_name(name)
    if not (path / "project.json").exists():
        raise ProjectError(f"no project named {name!r} in {path.parent}")
    project = Project(name, path)
    project.meta  # noqa: B018 - a damaged project.json is a ProjectError here, named
    return project


def create_project(name: str, forget: str | os.PathLike, retain: str | os.PathLike | None = None,
                   kind: str = "auto", k: int = 4, root=None, overwrite: bool = False,
                   eval_sets: dict[str, str | os.PathLike] | None = None,
                   sources: dict[str, str] | None = None,
                   field_maps: dict[str, dict[str, str]] | None = None,
                   labels: dict[str, str] | None = None, confirm_roles: bool = True,
                   protocol: str | None = None, meta: dict | None = None,
                   keep_history: bool = False) -> Project:
    """Validate the files and create the project in one step: a bad file raises
    :class:`~sga_core.data.DataError` (file, row, field) and nothing is written; ``labels``
    (role or set name -> name) names a file in its errors instead of its base name (a
    benchmark folder's ``raw/forget.jsonl``).
    ``field_maps`` renames each file's fields first (``{"forget": {"prompt": "question"},
    "retain": {...}, "<eval set>": {...}}``, :mod:`sga_core.data.mapping`; a role's mapping
    may also be ``(file field, workbench field)`` pairs, and one file field in two pairs is
    refused) and is kept in project.json, so the project's later files are offered the same
    mapping. ``confirm_roles``: False refuses set names that give a role (``forget_eval``,
    ``holdout``, ...; the command line's ``project create`` without ``--confirm-role``).
    ``protocol``: the evaluation protocol its runs get (default: demo). ``meta``: more
    project.json fields, written with the project (an import's protocol and notes: never a
    second step). An existing project is replaced only with ``overwrite``, in one step
    (:func:`~sga_core.fileio.replace_dir`: a crash leaves the old project or the new one);
    ``keep_history`` carries its normal-answer history over (:func:`carry_history`)."""
    from sga_core.data.mapping import check_map
    from sga_core.projects.eval_sets import check_role_confirmed, check_set_name, load_set
    from sga_core.protocols import ProtocolError, get_protocol

    name = check_name(name)
    files = {"forget": forget, "retain": retain, **(eval_sets or {})}
    maps = {}
    for role, m in (field_maps or {}).items():
        try:
            maps[role] = check_map(m)
        except DataError as exc:  # say which file's mapping
            raise DataError(exc.reason, Path(files[role]).name if files.get(role) else
                            exc.file, exc.row, exc.field) from None
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ProjectError(f"K={k!r}: K must be an integer from 1 to {MAX_K}")
    root = workspace_root(root)
    final = root / name
    if final.exists() and not overwrite:
        raise ProjectError(f"a project named {name!r} already exists")
    labels = labels or {}

    def named(role: str, load):
        try:
            return load()
        except DataError as exc:
            if role not in labels:
                raise
            raise DataError(exc.reason, labels[role], exc.row, exc.field) from None

    f_ds: Dataset = named("forget", lambda: load_dataset(forget, kind=kind,
                                                         field_map=maps.get("forget")))
    r_ds = named("retain", lambda: load_dataset(retain, field_map=maps.get("retain"))) \
        if retain else None
    if r_ds is not None and r_ds.kind != f_ds.kind:
        raise DataError(f"retain data is {r_ds.kind} but forget data is {f_ds.kind}",
                        file=labels.get("retain", Path(retain).name))
    try:
        set_names = [check_set_name(n) for n in (eval_sets or {})]
        protocol = get_protocol(protocol).name if protocol else None
        for n in set_names:
            check_role_confirmed(f_ds.kind, n, confirm_roles, protocol)
    except (ValueError, ProtocolError) as exc:
        raise ProjectError(str(exc)) from None
    evals = {}
    for n, p in zip(set_names, (eval_sets or {}).values()):
        evals[n] = named(n, lambda n=n, p=p: load_set(f_ds.kind, n, p, maps.get(n)))
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
            **({"protocol": protocol} if protocol else {}),
            "field_maps": {("eval:" + role if role in evals else role): m
                           for role, m in maps.items() if m},
            "eval_sources": {n: {"source": src.get(n, Path(p).name), "added_at": now_iso()}
                             for n, p in (eval_sets or {}).items()},
            **(meta or {}),
        })
        if keep_history and final.is_dir():
            carry_history(final, tmp)
        # one step: a reader (or a crash) finds the old project or the new one, never none
        replace_dir(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Project(name, final)


def carry_history(old: Path, new: Path) -> None:
    """Copy the old project's normal-answer history into the new project's folder, with its
    current table as one more version ("before-reset"): a reset replaces the data, never the
    answers someone wrote (they stay restorable on the Normal answers page)."""
    hist = new / "normals_history"
    if (old / "normals_history").is_dir():
        shutil.copytree(old / "normals_history", hist, dirs_exist_ok=True)
    current = old / "normals.jsonl"
    if current.is_file():
        hist.mkdir(exist_ok=True)
        numbers = [int(m.group(1)) for v in hist.glob("*.jsonl")
                   if (m := re.match(r"(\d+)-", v.name))]
        stamp = now_iso().replace(":", "").replace("-", "")
        shutil.copyfile(current, hist / f"{max(numbers, default=0) + 1:05d}-{stamp}-"
                                         "before-reset.jsonl")


def create_demo_project(name: str = "demo", root=None, overwrite: bool = False) -> Project:
    """The built-in demo: fictitious authors (QA), with the two real-world utility sets.
    Replacing an existing demo (``overwrite``, the Data page's confirmed reset) keeps its
    normal-answer history, the table it had as the newest version (:func:`carry_history`)."""
    from sga_core.assets import DEMO_DIR as demo

    return create_project(name, demo / "forget.jsonl", demo / "retain.jsonl", kind="qa",
                          root=root, overwrite=overwrite,
                          eval_sets={"real_authors": demo / "real_authors.jsonl",
                                     "world_facts": demo / "world_facts.jsonl"},
                          meta={"demo": True}, keep_history=True)
