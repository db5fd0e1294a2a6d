"""A project's extra evaluation sets: what each one is for (its role), and the checks a new one
passes before it is saved into ``workspace/<project>/eval/<name>.jsonl``.

Roles, decided by the set's rows and name (never by a separate setting that could drift):

- QA project: a QA set whose every row has perturbed answers is a **utility set**, one of
  Model Utility's components (its normalised probability, ROUGE-L and truth ratio enter the
  harmonic mean with the retain set's, :func:`sga_core.metrics.tofu.utility_sets`). TOFU's
  ``real_authors`` and ``world_facts`` are two such sets; a researcher's own sets, whatever
  their names, count the same way. A QA set without perturbed answers is reported (ROUGE-L,
  probability) but is not part of MU.
- text project (MUSE): ``holdout`` (text never trained on: MIA AUC, PrivLeak, perplexity),
  ``forget_qa`` / ``retain_qa`` (KnowMem); any other text set gets its perplexity, any other
  QA set its KnowMem.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from sga_core.data import load_dataset
from sga_core.metrics.tofu import is_utility_set

SET_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_]{0,39}$")
RESERVED = ("forget", "retain")
#: text projects' named sets: name -> (the data kind it must be, what it is for)
TEXT_ROLES = {
    "holdout": ("text", "holdout texts (never trained on): MIA AUC, PrivLeak and perplexity"),
    "forget_qa": ("qa", "KnowMem forget: questions about the forget documents"),
    "retain_qa": ("qa", "KnowMem retain: questions about the retain documents"),
}


def check_set_name(name: str) -> str:
    """A valid set name (it becomes part of metric names: ``<name>_rouge``)."""
    name = (name or "").strip()
    if not SET_NAME_RE.match(name):
        raise ValueError(f"evaluation set name {name[:60]!r}: use 1-40 lower-case letters, "
                         "digits or '_', starting with a letter or digit")
    if name in RESERVED:
        raise ValueError(f"evaluation set name {name!r} is reserved (the project's own "
                         f"{name} data)")
    return name


def suggest_set_name(filename: str) -> str:
    """A valid set name (:func:`check_set_name`) from an uploaded file's name: its stem
    without accents, in lower case, every run of other characters as '_', at most 40
    characters; a reserved name gets '_set' (forget.jsonl: forget_set); "set" when nothing
    is left."""
    base = re.split(r"[\\/]", filename or "")[-1]
    stem = base.rsplit(".", 1)[0] if "." in base.lstrip(".") else base
    ascii_stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    name = re.sub(r"[^a-z0-9_]+", "_", ascii_stem.lower()).strip("_")[:40].rstrip("_")
    if name in RESERVED:
        name += "_set"
    return check_set_name(name or "set")


def set_kind(project_kind: str, name: str) -> str:
    """The data kind a set called ``name`` must have in a project of ``project_kind``."""
    if project_kind == "qa":
        return "qa"
    return TEXT_ROLES[name][0] if name in TEXT_ROLES else "auto"


def role_of(project_kind: str, name: str, rows: Sequence[dict], kind: str) -> tuple[str, str]:
    """``(role, what it is for)`` of a set; role is ``utility``, ``extra``, or a text role."""
    if project_kind == "qa":
        if is_utility_set(rows):
            return "utility", ("utility set: a Model Utility (MU) component (normalised "
                               "probability, ROUGE-L, truth ratio)")
        without = [i + 1 for i, r in enumerate(rows) if not r.get("perturbed_answer")]
        shown = ", ".join(map(str, without[:5])) + (" ..." if len(without) > 5 else "")
        return "extra", (f"extra QA set: ROUGE-L and probability reported, not part of MU "
                         f"(no perturbed_answer in row {shown})")
    if name in TEXT_ROLES:
        return name, TEXT_ROLES[name][1]
    if kind == "qa":
        return "extra", "extra QA set: KnowMem (ROUGE-L F1 of the answers)"
    return "extra", "extra text set: perplexity"


def load_set(project_kind: str, name: str, path: str | Path,
             field_map: dict[str, str] | None = None):
    """The set's validated rows (a :class:`~sga_core.data.Dataset`), checked like forget data
    and for the kind its name needs; DataError (file, row, field) otherwise."""
    return load_dataset(path, kind=set_kind(project_kind, name), field_map=field_map)


@functools.lru_cache(maxsize=128)
def _summary(path: str, size: int, mtime_ns: int, inode: int, project_kind: str,
             name: str) -> tuple[int, str, str, str]:
    ds = load_dataset(path)
    role, what = role_of(project_kind, name, ds.rows, ds.kind)
    return len(ds), ds.kind, role, what


def set_summary(project_kind: str, name: str, path: str | os.PathLike) -> dict:
    """A saved set's ``rows``, ``kind``, ``role`` and ``what`` it is for, parsed once per
    file version (path, size, mtime, inode): the Data page lists the sets on every render,
    and a large set costs seconds to parse. A replaced or appended file is parsed again."""
    p = Path(path).resolve()
    st = p.stat()
    n, kind, role, what = _summary(str(p), st.st_size, st.st_mtime_ns, st.st_ino,
                                   project_kind, name)
    return {"rows": n, "kind": kind, "role": role, "what": what}


set_summary.cache_info = _summary.cache_info  # type: ignore[attr-defined]
set_summary.cache_clear = _summary.cache_clear  # type: ignore[attr-defined]


__all__ = ["RESERVED", "SET_NAME_RE", "TEXT_ROLES", "check_set_name", "load_set", "role_of",
           "set_kind", "set_summary"]
