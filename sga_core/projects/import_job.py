"""A benchmark import as a background job (docs/decisions/007-ui-never-loads-a-model.md):
the copyright task cuts its book with a model's tokenizer, and MUSE cuts its long raw texts
into token chunks (:mod:`sga_core.data.long_text`), so the Data page never imports in its
own process. The page starts ``python -m sga_core.projects.import_job <workspace>/.import``
(:mod:`sga_core.projects.jobs`), which imports with
:func:`~sga_core.projects.benchmarks.import_with` and records each stage in
``<workspace>/.import/import/status.json`` (with how far it is: done of total, which the
page's bar shows); the page follows it and a reload re-attaches.

The uploads (the copyright task's book and retain text) are handed over as files in the
job's folder, imported under their own names (an error names the user's file), and deleted
when the job ends, whatever the outcome. A refused import writes no project and fails the
job with the importer's own message (file, row, field)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sga_core.fileio import read_json
from sga_core.projects import jobs as bgjob
from sga_core.projects.listing import check_name, workspace_root
from sga_core.projects.project import Project

NAME = "import"
HOME = ".import"  # in the workspace: a hidden name no project can have
UPLOAD = "{field}.upload"


def home(root=None) -> Project:
    """Where the workspace's import job lives (its folder is ``<workspace>/.import/import``;
    not a project: no project.json, a name no project can take)."""
    path = workspace_root(root) / HOME
    return Project(HOME, path)


def start(benchmark: str, name: str | None, options: dict | None = None, *,
          uploads: dict[str, tuple[str, bytes]] | None = None, overwrite: bool = False,
          root=None) -> Path:
    """Start importing ``benchmark`` as project ``name`` with its import ``options``;
    ``uploads`` ({option: (file name, bytes)}) are its text files. Refuses (RuntimeError)
    while an import is running; a bad name or benchmark is refused before anything starts."""
    from sga_core.projects.benchmarks import get_importer

    entry = get_importer(benchmark)
    if name:
        name = check_name(name)
    uploads = uploads or {}
    unknown = [f for f in uploads if f not in entry.files]
    if unknown:
        raise ValueError(f"{benchmark} takes no uploaded file for {', '.join(unknown)}")
    files = {UPLOAD.format(field=f): data for f, (_n, data) in uploads.items()}
    spec = {"benchmark": entry.name, "name": name or None, "options": dict(options or {}),
            "uploads": {f: Path(filename).name for f, (filename, _d) in uploads.items()},
            "overwrite": bool(overwrite), "workspace": str(workspace_root(root))}
    return bgjob.start(home(root), NAME, "sga_core.projects.import_job", spec,
                       clear=("result.json",), files=files)


def status(root=None) -> dict:
    """The import job's status: state, stage, ``created`` (the project) once done,
    ``error`` when refused."""
    return bgjob.status(home(root), NAME)


def result(root=None) -> dict | None:
    try:
        data = read_json(bgjob.job_dir(home(root), NAME) / "result.json", default=None)
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def recorder(job_home: Project):
    """The importer's ``progress(stage, done, total)``, recorded in the job's status.json:
    the page shows the stage and a bar at done of total."""
    def progress(stage: str, done: int | None = None, total: int | None = None) -> None:
        bgjob.update(job_home, NAME, stage=stage, done=done, total=total, pid=os.getpid())
    return progress


def _work(job_home: Project, spec: dict) -> dict:
    from sga_core.fileio import atomic_write_json
    from sga_core.projects.benchmarks import import_with
    from sga_core.projects.uploads import upload_path
    from sga_core.runs.leftovers import temp_dir

    d = bgjob.job_dir(job_home, NAME)
    progress = recorder(job_home)
    options = dict(spec.get("options") or {})
    with temp_dir("upload") as tmp:
        for field, filename in (spec.get("uploads") or {}).items():
            data = (d / UPLOAD.format(field=field)).read_bytes()
            options[field] = str(upload_path(tmp, field, filename, data))
        project = import_with(spec["benchmark"], spec.get("name"), options,
                              root=spec.get("workspace"), overwrite=bool(spec.get("overwrite")),
                              progress=progress)
    meta = project.meta
    out = {"project": project.name, "n_forget": meta.get("n_forget"),
           "n_retain": meta.get("n_retain"), "notes": meta.get("import_notes") or []}
    atomic_write_json(d / "result.json", out)
    return {"created": project.name, "stage": "done"}


def main(argv=None) -> int:
    """The job: import, then remove the uploads whatever happened."""
    from sga_core.data.errors import DataError
    from sga_core.data.hub import HubError
    from sga_core.model.loading import ModelError
    from sga_core.params import ConfigError
    from sga_core.projects.project import ProjectError

    job_home = bgjob.project_from_argv(argv)
    d = bgjob.job_dir(job_home, NAME)
    try:
        fields = _work(job_home, bgjob.spec(job_home, NAME))
    except (DataError, HubError, ProjectError, ConfigError, ModelError) as exc:
        bgjob.fail(job_home, NAME, str(exc))  # the importer's own words: file, row, field
        return 1
    except Exception as exc:  # noqa: BLE001 - recorded for the page
        bgjob.fail(job_home, NAME, f"{type(exc).__name__}: {exc}")
        return 1
    finally:
        for f in d.glob("*.upload"):
            f.unlink(missing_ok=True)
    bgjob.complete(job_home, NAME, **fields)
    return 0


if __name__ == "__main__":
    sys.exit(main())
