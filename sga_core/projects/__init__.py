"""Projects: named workspaces of data, normal answers and their history, the runs made from
them, and the background jobs (generation, r*, probes) that act on them."""

from sga_core.projects.create import create_project
from sga_core.projects.demo import create_demo_project
from sga_core.projects.listing import check_name, list_projects, load_project, workspace_root
from sga_core.projects.project import Project, ProjectError

__all__ = ["Project", "ProjectError", "check_name", "create_demo_project", "create_project",
           "list_projects", "load_project", "workspace_root"]
