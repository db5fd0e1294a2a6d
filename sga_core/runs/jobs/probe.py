"""A question answered by the original model and chosen runs, token by token:
:mod:`sga_core.projects.probe_job`."""

from sga_core.runs.jobs.base import project_kind

KIND = project_kind("probe", "before/after probe", "sga_core.projects.probe_job")
