"""The per-sample r* analysis of a project (docs/spec.md#21-closed-form):
:mod:`sga_core.projects.rstar_job`."""

from sga_core.runs.jobs.base import project_kind

KIND = project_kind("rstar", "r* analysis", "sga_core.projects.rstar_job")
