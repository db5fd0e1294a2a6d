"""A project made or extended from uploaded files (the browser's file uploaders hand over a
file name and its bytes). Each upload is written under its own name in a temporary folder of
this process (:func:`sga_core.runs.leftovers.temp_dir`), so an error names the user's file,
never a temporary path, and nothing is kept of a refused file."""

from __future__ import annotations

from pathlib import Path

from sga_core.data import NormalTable
from sga_core.data.mapping import FieldReport, inspect_fields
from sga_core.projects.benchmarks import import_with
from sga_core.projects.create import create_project
from sga_core.projects.project import Project
from sga_core.runs.leftovers import temp_dir


def upload_path(tmp: str, role: str, filename: str, data: bytes) -> Path:
    """An upload written under its own name (errors name the user's file), in its own
    folder ``role`` of the temporary folder ``tmp``."""
    path = Path(tmp) / role / Path(filename).name
    path.parent.mkdir()
    path.write_bytes(data)
    return path


def new_project(name: str, uploads: dict[str, tuple[str, bytes]], kind: str = "auto",
                overwrite: bool = False,
                field_maps: dict[str, dict[str, str]] | None = None,
                protocol: str | None = None) -> Project:
    """A project from uploaded files ({"forget": (file name, bytes), "retain": ...}), each
    file's fields renamed by its mapping (``field_maps[role]``, remembered with the project);
    a bad file raises DataError naming the user's file (never a temporary path), nothing is
    written."""
    with temp_dir("upload") as tmp:
        paths = {role: upload_path(tmp, role, filename, data)
                 for role, (filename, data) in uploads.items()}
        return create_project(name, paths["forget"], paths.get("retain"), kind=kind,
                              overwrite=overwrite, field_maps=field_maps, protocol=protocol)


def inspect_upload(filename: str, data: bytes, kind: str = "auto",
                   mapping: dict[str, str] | None = None) -> FieldReport:
    """The fields of an uploaded file, the required ones it lacks for ``kind`` after
    ``mapping``, and suggested mappings (DataError when the file itself cannot be read)."""
    with temp_dir("upload") as tmp:
        return inspect_fields(upload_path(tmp, "inspect", filename, data), kind, mapping)


def add_eval_set(project: Project, name: str, filename: str, data: bytes,
                 field_map: dict[str, str] | None = None, replace: bool = False,
                 confirm_role: bool = False) -> dict:
    """Add an uploaded evaluation set to the project (validated like forget data; DataError
    naming the user's file, nothing saved; a role-giving name needs ``confirm_role``);
    returns its entry (name, rows, role, ..., ``warning``)."""
    with temp_dir("upload") as tmp:
        return project.add_eval_set(name, upload_path(tmp, "set", filename, data),
                                    field_map=field_map, source=Path(filename).name,
                                    replace=replace, confirm_role=confirm_role)


def import_normals(project: Project, filename: str, data: bytes, k: int | None = None
                   ) -> NormalTable:
    """Replace the project's normal-answer table with an uploaded one (the old one stays in
    the history); every k and forget_index is checked against the project (K = ``k``,
    default the project's)."""
    with temp_dir("upload") as tmp:
        path = Path(tmp) / Path(filename).name
        path.write_bytes(data)
        return project.import_normals(path, k=k, name=Path(filename).name)


def import_uploaded_benchmark(benchmark: str, name: str | None = None,
                              options: dict | None = None, *,
                              uploads: dict[str, tuple[str, bytes]] | None = None,
                              overwrite: bool = False) -> Project:
    """A ready project from a registered benchmark with its import ``options``
    (:func:`sga_core.projects.benchmarks.import_with`); ``uploads`` ({option: (file name,
    bytes)}) are its text files, written to a temporary folder for the import (the copyright
    task's book and retain text). ``datasets`` is imported only when a hub benchmark runs."""
    options = dict(options or {})
    with temp_dir("upload") as tmp:
        for role, (filename, data) in (uploads or {}).items():
            options[role] = str(upload_path(tmp, role, filename, data))
        return import_with(benchmark, name or None, options, overwrite=overwrite)
