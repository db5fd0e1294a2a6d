"""Normal-answer generation as a background job of a project, so the browser stays light (no
torch in the UI process) and a reload re-attaches to it.

``workspace/<project>/generation/`` holds ``spec.json`` (backend, options, rows; never the
API key), ``status.json`` (state, stage, done/total, tokens, errors, the version saved) and
``result.jsonl`` (the new answers). On success the job itself puts the new answers into the
project's table (all rows, or just the regenerated ones) as a new version, so they land even
if nobody has the page open; the table before is the previous version in the history. The
key reaches the child only through its environment.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sga_core.data import NormalTable
from sga_core.projects import jobs as bgjob

SECRET_OPTIONS = ("api_key",)


NAME = "generation"


def job_dir(project) -> Path:
    return bgjob.job_dir(project, NAME)


def status(project) -> dict:
    return bgjob.status(project, NAME)


def start(project, backend: str, k: int, options: dict | None = None,
          rows: list[int] | None = None, api_key: str | None = None) -> Path:
    """Start generating for all forget rows (or ``rows``); refuses while one is running.
    The API key goes to the child's environment only, never to a file."""
    options = {k_: v for k_, v in (options or {}).items() if k_ not in SECRET_OPTIONS}
    return bgjob.start(project, NAME, "sga_core.normals.job",
                       {"backend": backend, "k": int(k), "options": options, "rows": rows},
                       env={"OPENAI_API_KEY": api_key} if api_key else None,
                       clear=("result.jsonl",))


def describe_rows(rows: list[int] | None) -> str:
    """'all rows' or 'row 1, 4': how the job's status, page and version names say it."""
    return f"row {', '.join(map(str, rows))}" if rows else "all rows"


def merge(current: NormalTable | None, new: NormalTable, rows: list[int] | None) -> NormalTable:
    """The current table with the generated answers of ``rows`` (all rows if None) replaced."""
    keep = [] if current is None else [a for a in current.answers
                                       if rows is not None and a.forget_index not in rows]
    touched = set(rows) if rows is not None else None
    fresh = [a for a in new.answers if touched is None or a.forget_index in touched]
    k = max(new.k, current.k if current is not None and rows is not None else 0)
    return NormalTable(keep + fresh, k)


def generate(project, spec: dict) -> dict:
    """Generate the spec's rows and save them into the project's table as a new version."""
    from sga_core.data import NormalAnswer
    from sga_core.normals import generate_normals

    forget = project.forget()
    idx = spec.get("rows") or list(range(len(forget)))
    backend = spec["backend"]
    bgjob.update(project, NAME, stage="loading the model" if backend in ("local", "retrieval")
                 else "starting")
    bad = [i for i in idx if not 0 <= i < len(forget)]
    if bad:
        raise ValueError(f"forget row {bad[0]} does not exist")
    options = dict(spec.get("options") or {})
    if backend == "retrieval":
        options["retain_rows"] = project.retain()
    res = generate_normals(backend, [forget[i] for i in idx], project.kind, spec["k"],
                           progress=bgjob.progress_callback(project, NAME, stage="generating"),
                           **options)
    # re-number the answers from positions in ``idx`` back to forget rows
    answers = [NormalAnswer(**{**a.to_dict(), "forget_index": idx[a.forget_index]})
               for a in res.table.answers]
    new = NormalTable(answers, spec["k"])
    new.save(job_dir(project) / "result.jsonl")
    rows = spec.get("rows")
    _, version = project.update_normals(lambda current: merge(current, new, rows),
                                        reason=f"generate {backend} {describe_rows(rows)}")
    return {"done": len(idx), "total": len(idx), "stage": None,
            "errors": {str(idx[i]): e for i, e in res.errors.items()}, "tokens": res.tokens,
            "summary": res.summary_lines(), "applied": True, "version": version.name}


def main(argv=None) -> int:
    from sga_core.normals.openai_backend import scrub

    # the key is scrubbed from any error text the page shows
    return bgjob.run_job(NAME, generate, argv,
                         scrub=lambda msg: scrub(msg, os.environ.get("OPENAI_API_KEY") or ""))


if __name__ == "__main__":
    sys.exit(main())
