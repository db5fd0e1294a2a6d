"""A benchmark's published files imported as a project (cutting long texts needs a tokenizer,
so never in the UI): :mod:`sga_core.projects.import_job`."""

from sga_core.runs.jobs.base import project_kind

KIND = project_kind("import", "benchmark import", "sga_core.projects.import_job")
