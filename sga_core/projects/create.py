"""Creating a project: its files validated and written in one step, and an existing
project replaced only on request, atomically (a crash leaves the old project or the new
one), its normal-answer history carried over when asked."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from sga_core.data import MAX_K, DataError, Dataset, load_dataset, rows_hash, write_dataset
from sga_core.fileio import atomic_write_json, now_iso, replace_dir
from sga_core.projects.listing import check_name, workspace_root
from sga_core.projects.project import PARTS_DIR, Project, ProjectError

#: a forget part's name: ``<study>/forget_<k>`` (MUSE's ``scal/forget_1`` ...)
PART_RE = re.compile(r"[a-z]{1,16}/forget_[0-9]{1,3}")


def create_project(name: str, forget: str | os.PathLike, retain: str | os.PathLike | None = None,
                   kind: str = "auto", k: int = 4, root=None, overwrite: bool = False,
                   eval_sets: dict[str, str | os.PathLike] | None = None,
                   sources: dict[str, str] | None = None,
                   field_maps: dict[str, dict[str, str]] | None = None,
                   labels: dict[str, str] | None = None, confirm_roles: bool = True,
                   protocol: str | None = None, meta: dict | None = None,
                   keep_history: bool = False,
                   forget_parts: dict[str, str | os.PathLike] | None = None) -> Project:
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
    ``keep_history`` carries its normal-answer history over (:func:`carry_history`).
    ``forget_parts``: further forget sets (``"sust/forget_2"`` -> file; MUSE's study
    splits), validated as forget data of the same kind and written as
    ``parts/<name>.jsonl`` (:meth:`Project.forget_parts`)."""
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
        raise ProjectError(f"a project named {name!r} already exists: choose another name, "
                           "or replace it (the Data page's 'replace a project with the same "
                           "name'; project create --replace, import --overwrite)")
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
    for role, ds in (("forget", f_ds), ("retain", r_ds)):
        if ds is not None and ds.kind == "mc":
            where = labels.get(role) or Path(forget if role == "forget" else retain).name
            raise DataError(f"multiple-choice rows (question, choices, answer) are an "
                            f"evaluation set, not {role} data: add them as an evaluation set",
                            file=where)
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
    parts = {}
    for n, p in (forget_parts or {}).items():
        if not PART_RE.fullmatch(n):
            raise ProjectError(f"forget part {n!r}: a name <study>/forget_<k> is expected")
        parts[n] = named(n, lambda p=p: load_dataset(p, kind=f_ds.kind))
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
        for n, ds in parts.items():
            write_dataset(tmp / PARTS_DIR / f"{n}.jsonl", ds.rows)
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
            **({"forget_parts": {n: {"source": src.get(n, Path(forget_parts[n]).name),
                                     "rows": len(ds)} for n, ds in parts.items()}}
               if parts else {}),
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
