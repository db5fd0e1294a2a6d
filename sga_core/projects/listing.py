"""Where the projects are: the workspace folder, the names a project may have, the
projects in it, and one loaded by its name."""

from __future__ import annotations

import os
import re
from pathlib import Path

from sga_core.projects.project import Project, ProjectError

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


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


def load_project(name: str, root=None) -> Project:
    path = workspace_root(root) / check_name(name)
    if not (path / "project.json").exists():
        raise ProjectError(f"no project named {name!r} in {path.parent}")
    project = Project(name, path)
    project.meta  # noqa: B018 - a damaged project.json is a ProjectError here, named
    return project
