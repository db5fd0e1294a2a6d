"""Normal answers generated for a project's forget rows by a normals backend (a model, an API):
:mod:`sga_core.normals.job`."""

from sga_core.runs.jobs.base import project_kind

KIND = project_kind("generation", "normal-answer generation", "sga_core.normals.job")
