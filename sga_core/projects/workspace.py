"""The workspace as a whole: its projects on a first start (the built-in demo), and what
killed processes left behind in it and in the runs folder."""

from __future__ import annotations

from pathlib import Path

from sga_core.projects.demo import create_demo_project
from sga_core.projects.listing import list_projects, workspace_root
from sga_core.runs.folder import runs_root
from sga_core.runs.leftovers import clean_leftovers, clean_temp_leftovers


def ensure_projects() -> list[str]:
    """The projects in the workspace; on a first start the built-in demo is created."""
    names = list_projects()
    if not names:
        create_demo_project()
        names = list_projects()
    return names


def clean_workspace() -> list[Path]:
    """Remove what killed processes left behind in the workspace and the runs folder
    (partial project or run folders, temporary files) once they are an hour old, and the
    system temporary folders of processes that are gone."""
    return clean_leftovers(workspace_root(), runs_root()) + clean_temp_leftovers()
