"""Normal-answer generation as a background job of a project, so the browser stays light (no
torch in the UI process) and a reload re-attaches to it.

``workspace/<project>/generation/`` holds ``spec.json`` (backend, options, rows; never the
API key), ``status.json`` (state, stage, done/total, tokens, errors, the version saved) and
``result.jsonl`` (the new answers). On success the job itself puts the new answers into the
project's table (all rows, or just the regenerated ones) as a new version, so they land even
if nobody has the page open; the table before is the previous version in the history. The
key reaches the child only through its environment.

``base.jsonl`` is the table as it was when the job started: an answer that differs from it
when the job ends (edited, added or deleted on the page meanwhile) is the user's and is
kept, not overwritten; the status counts them (``kept_edits``) and its message says so.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from sga_core.data import NormalAnswer, NormalTable
from sga_core.projects import jobs as bgjob
from sga_core.text import plural

SECRET_OPTIONS = ("api_key",)


NAME = "generation"
BASE = "base.jsonl"  # the table when the job started


def job_dir(project) -> Path:
    return bgjob.job_dir(project, NAME)


def status(project) -> dict:
    return bgjob.status(project, NAME)


def start(project, backend: str, k: int, options: dict | None = None,
          rows: list[int] | None = None, api_key: str | None = None) -> Path:
    """Start generating for all forget rows (or ``rows``); refuses while one is running.
    The API key goes to the child's environment only, never to a file."""
    from sga_core.normals.registry import get_backend

    key_env = get_backend(backend).api_key_env  # where the backend reads its key from
    options = {k_: v for k_, v in (options or {}).items() if k_ not in SECRET_OPTIONS}
    table = project.normals_path
    return bgjob.start(project, NAME, "sga_core.normals.job",
                       {"backend": backend, "k": int(k), "options": options, "rows": rows},
                       env={key_env: api_key} if api_key and key_env else None,
                       clear=("result.jsonl",),
                       files={BASE: table.read_bytes() if table.exists() else b""})


def describe_rows(rows: list[int] | None) -> str:
    """'all rows' or 'row 1, 4': how the job's status, page and version names say it."""
    return f"row {', '.join(map(str, rows))}" if rows else "all rows"


def merge(current: NormalTable | None, new: NormalTable, rows: list[int] | None,
          failed: Iterable[int] = ()) -> NormalTable:
    """The current table with the generated answers of ``rows`` (all rows if None) replaced,
    except the ``failed`` rows: those keep their current answers. K follows the generation
    only when it replaced every row; otherwise it is the larger of both, so no kept answer
    falls outside it."""
    failed = set(failed)

    def replaced(i: int) -> bool:
        return (rows is None or i in rows) and i not in failed

    keep = [] if current is None else [a for a in current.answers if not replaced(a.forget_index)]
    fresh = [a for a in new.answers if replaced(a.forget_index)]
    everything = rows is None and not failed
    k = new.k if everything or current is None else max(new.k, current.k)
    return NormalTable(keep + fresh, k)


def _same(a: NormalAnswer | None, b: NormalAnswer | None) -> bool:
    if a is None or b is None:
        return a is b
    return json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)


def keep_edits(merged: NormalTable, current: NormalTable | None, base: NormalTable | None,
               rows: list[int] | None, failed: Iterable[int] = ()) -> tuple[NormalTable, int]:
    """``merged`` with every answer of the generated rows that the user changed since the
    job started (``current`` differs from ``base``, the table then: edited, added or
    deleted) put back as the user left it; and how many. ``base`` None (a job started
    without a snapshot) keeps ``merged`` as it is."""
    if base is None:
        return merged, 0
    failed = set(failed)
    now = {} if current is None else {(a.forget_index, a.k): a for a in current.answers}
    then = {(a.forget_index, a.k): a for a in base.answers}
    edited = [key for key in sorted(now.keys() | then.keys())
              if (rows is None or key[0] in rows) and key[0] not in failed
              and not _same(now.get(key), then.get(key))]
    if not edited:
        return merged, 0
    out = {(a.forget_index, a.k): a for a in merged.answers}
    for key in edited:
        if key in now:
            out[key] = now[key]
        else:
            out.pop(key, None)
    return NormalTable(list(out.values()), max([merged.k] + [a.k + 1 for a in out.values()])), \
        len(edited)


def _base(project) -> NormalTable | None:
    """The table when the job started (empty if there was none); None without a snapshot."""
    from sga_core.data import MAX_K

    path = job_dir(project) / BASE
    return NormalTable.load(path, k=MAX_K) if path.exists() else None


class NothingGenerated(RuntimeError):
    """Every requested row failed: the table is kept as it was."""


def _failed_rows(res, new: NormalTable, idx: list[int], k: int) -> dict[int, str]:
    """Forget rows (by index) that did not get all K-1 non-empty answers, and why."""
    failed = {idx[i]: e for i, e in res.errors.items()}
    for i in idx:
        if i not in failed:
            got = sum(1 for j in range(1, k) if (a := new.get(i, j)) and a.text.strip())
            if got < k - 1:
                failed[i] = f"got {got} of {k - 1} answers"
    return failed


def generate(project, spec: dict) -> dict:
    """Generate the spec's rows and merge them into the project's table as a new version.

    Rows that failed (an error, or fewer than K-1 non-empty answers) keep their answers; if
    every row failed, nothing is saved and the job fails, saying why. The status says what
    happened: ``applied`` (saved or not), ``outcome`` ("replaced", "merged" or "kept"),
    ``replaced_rows`` and ``failed_rows`` (forget indices), ``errors`` (row -> reason) and a
    one-line ``message``."""
    from sga_core.normals import generate_normals, get_backend

    forget = project.forget()
    idx = spec.get("rows") or list(range(len(forget)))
    backend = spec["backend"]
    entry = get_backend(backend)
    bgjob.update(project, NAME, stage="loading the model" if entry.loads_model else "starting")
    bad = [i for i in idx if not 0 <= i < len(forget)]
    if bad:
        raise ValueError(f"forget row {bad[0]} does not exist")
    options = dict(spec.get("options") or {})
    if entry.needs_retain:
        options["retain_rows"] = project.retain()
    res = generate_normals(backend, [forget[i] for i in idx], project.kind, spec["k"],
                           progress=bgjob.progress_callback(project, NAME, stage="generating"),
                           **options)
    # re-number the answers from positions in ``idx`` back to forget rows
    answers = [NormalAnswer(**{**a.to_dict(), "forget_index": idx[a.forget_index]})
               for a in res.table.answers]
    new = NormalTable(answers, spec["k"])
    new.save(job_dir(project) / "result.jsonl")
    failed = _failed_rows(res, new, idx, spec["k"])
    done = [i for i in idx if i not in failed]
    fields = {"done": len(idx), "total": len(idx), "stage": None, "tokens": res.tokens,
              "errors": {str(i): e for i, e in sorted(failed.items())},
              "failed_rows": sorted(failed), "replaced_rows": done,
              "summary": res.summary_lines()}
    if not done:
        first = min(failed)
        message = (f"no answers were generated ({len(failed)} of {plural(len(idx), 'row')} failed; "
                   f"row {first}: {failed[first]}); the table was kept as it was")
        bgjob.update(project, NAME, **fields, applied=False, outcome="kept", message=message)
        raise NothingGenerated(message)
    rows = spec.get("rows")
    base = _base(project)
    kept = 0

    def change(current: NormalTable | None) -> NormalTable:
        nonlocal kept
        table, kept = keep_edits(merge(current, new, rows, failed), current, base, rows,
                                 failed)
        return table

    _, version = project.update_normals(change,
                                        reason=f"generate {backend} {describe_rows(rows)}")
    message = f"saved the answers of {plural(len(done), 'row')} as version {version.name}"
    if failed:
        message += (f"; {plural(len(failed), 'row')} failed and kept their previous answers: "
                    f"{', '.join(map(str, sorted(failed)[:20]))}"
                    + (" ..." if len(failed) > 20 else ""))
    if kept:
        message += f"; kept {kept} answer{'s' if kept != 1 else ''} you edited while generating"
    return {**fields, "applied": True, "outcome": "merged" if failed or kept else "replaced",
            "kept_edits": kept, "version": version.name, "message": message}


def _scrub_keys(msg: str) -> str:
    """``msg`` with every backend's API key (from its environment variable) masked."""
    from sga_core.normals.openai_backend import scrub
    from sga_core.normals.registry import backends

    for env in sorted({b.api_key_env for b in backends() if b.api_key_env}):
        msg = scrub(msg, os.environ.get(env) or "")
    return msg


def main(argv=None) -> int:
    # the key is scrubbed from any error text the page shows
    return bgjob.run_job(NAME, generate, argv, scrub=_scrub_keys)


if __name__ == "__main__":
    sys.exit(main())
