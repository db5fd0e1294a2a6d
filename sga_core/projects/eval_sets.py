"""A project's extra evaluation sets: what each one is for (its role), and the checks a new one
passes before it is saved into ``workspace/<project>/eval/<name>.jsonl``.

Roles, decided by the set's rows and name (never by a separate setting that could drift); a
name that gives a role (:data:`sga_core.protocols.SET_ROLES`: ``forget_eval``, ``holdout``,
``forget_qa``, ``<set>_icl``, ...) is confirmed before a set is added under it
(:func:`check_role_confirmed`), and the role is said in words built from the role and the
metric catalog under the project's protocol (:func:`role_words`):

- QA project: a QA set whose every row has perturbed answers is a **utility set**, one of
  Model Utility's components (its normalised probability, ROUGE-L and truth ratio enter the
  harmonic mean with the retain set's, :func:`sga_core.metrics.tofu.utility_sets`). TOFU's
  ``real_authors`` and ``world_facts`` are two such sets; a researcher's own sets, whatever
  their names, count the same way. A QA set without perturbed answers is reported (ROUGE-L,
  probability) but is not part of MU.
- text project (MUSE): ``holdout`` (text never trained on: MIA AUC, PrivLeak, perplexity),
  ``forget_qa`` / ``retain_qa`` (KnowMem), ``<set>_icl`` (few-shot examples); any other text
  set gets its perplexity, any other QA set its KnowMem.
- either kind: a multiple-choice set (``question``, ``choices``, ``answer``: WMDP's and
  MMLU's questions) gets its accuracy (``<set>_accuracy``; under the ``wmdp`` protocol
  ``wmdp_bio``, ``wmdp_cyber``, ``wmdp_chem`` and ``mmlu`` are the protocol's columns).
- either kind: ``forget_eval`` / ``retain_eval`` replace the forget / retain rows in the
  evaluation (a benchmark's own evaluation rows). A text ``forget_eval`` must come from the
  trained forget set: :func:`forget_overlap_warning` says how many of its passages do not.
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
from sga_core.protocols import ICL_SUFFIX, SET_ROLES, get_protocol, set_role

SET_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_]{0,39}$")
RESERVED = ("forget", "retain")
#: text projects' named sets: name -> (the data kind it must be, what it is for)
TEXT_ROLES = {n: (r.data_kind, r.what) for n, r in SET_ROLES.items() if "text" in r.kinds}


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
    role = set_role(project_kind, name)
    return role.data_kind if role is not None else "auto"


def _and(words: Sequence[str]) -> str:
    words = list(dict.fromkeys(words))
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def _metric_labels(project_kind: str, set_name: str, protocol: str,
                   columns_only: bool) -> list[str]:
    """The labels of the metrics the catalog computes on ``set_name`` under ``protocol``,
    variants named once: "MIA AUC (LOSS)" and "MIA AUC (ZLib)" are "MIA AUC"."""
    from sga_core.metrics.catalog import metrics_for

    return list(dict.fromkeys(
        m.label.split(" (")[0] for m in metrics_for(project_kind)
        if set_name in m.on and not m.is_family and m.under(protocol)
        and (m.column is not None or not columns_only)))


def role_words(project_kind: str, name: str, protocol: str | None = None) -> str | None:
    """What a set called ``name`` does, in words, under ``protocol`` (the project's; None:
    demo), built from its role (:data:`~sga_core.protocols.SET_ROLES`) and the metric
    catalog; None when the name gives no role."""
    role = set_role(project_kind, name)
    if role is None:
        return None
    proto = get_protocol(protocol)
    if name.endswith(ICL_SUFFIX) and name not in SET_ROLES:
        served = name[:-len(ICL_SUFFIX)]
        labels = _metric_labels(project_kind, served, proto.name, False)
        words = f"few-shot examples for {_and(labels) or served}"
        return words + ("" if proto.knowmem_icl else
                        f" (not used: the {proto.name} protocol asks zero-shot)")
    if role.replaces:
        labels = (_metric_labels(project_kind, role.replaces, proto.name, True) or
                  _metric_labels(project_kind, role.replaces, proto.name, False))
        head = f"replaces the {role.replaces} rows for {_and(labels) or 'every metric'}"
    else:
        labels = _metric_labels(project_kind, name, proto.name, False)
        head = (f"{name} for {_and(labels)}" if labels else
                f"{name}: not used under the {proto.name} protocol")
    return f"{head}: {role.what}"


def project_role_words(project, name: str) -> str | None:
    """:func:`role_words` in ``project`` (its kind, its protocol)."""
    return role_words(project.kind, name, project.protocol)


def protocol_gaps(project, protocol: str | None = None) -> list[str]:
    """Where a text project's evaluation under ``protocol`` (default: its own) differs from
    what the protocol's summary says, for want of a set: KnowMem asked zero-shot where a
    question set has no ``<set>_icl`` few-shot set, and VerbMem on the project's own forget
    rows where it has no ``forget_eval`` (the benchmark's VerbMem passages). The Train and
    Data pages show these beside the protocol's line."""
    if project.kind != "text":
        return []
    proto = get_protocol(protocol or project.protocol)
    sets = project.eval_sets()
    out = []
    if proto.knowmem_icl:
        bare = [n for n in sets if not n.endswith(ICL_SUFFIX) and n + ICL_SUFFIX not in sets
                and (role := set_role("text", n)) is not None and role.data_kind == "qa"]
        out += [f"no {n + ICL_SUFFIX} set: KnowMem is asked zero-shot on {n}, not with the "
                "protocol's few-shot prompts" for n in bare]  # one missing set a line
    if proto.verbmem_gt_tokens and "forget_eval" not in sets:
        out.append("no forget_eval set (the benchmark's VerbMem passages): VerbMem and "
                   "PrivLeak read the project's own forget rows, so they are not the "
                   "benchmark's numbers")
    return out


def check_role_confirmed(project_kind: str, name: str, confirmed: bool,
                         protocol: str | None = None) -> None:
    """A set name that gives a role is taken only when ``confirmed``; otherwise a
    ValueError saying what the role does and how to confirm it (or choose another name)."""
    words = role_words(project_kind, name, protocol)
    if words is None or confirmed:
        return
    raise ValueError(f"the set name {name!r} gives the set a role ({words}). Confirm the "
                     "role (the Data page's checkbox, --confirm-role on the command line) "
                     "or choose another name")


def role_of(project_kind: str, name: str, rows: Sequence[dict], kind: str,
            protocol: str | None = None) -> tuple[str, str]:
    """``(role, what it is for)`` of a set; role is ``utility``, ``extra``, or the name of
    a role its name gives (:func:`role_words`)."""
    words = role_words(project_kind, name, protocol)
    if words is not None:
        return name, words
    if kind == "mc":
        return "multiple-choice", (f"multiple-choice set: accuracy ({name}_accuracy), each "
                                   "choice scored as lm-evaluation-harness scores it")
    if project_kind == "qa":
        if is_utility_set(rows):
            return "utility", ("utility set: a Model Utility (MU) component (normalised "
                               "probability, ROUGE-L, truth ratio)")
        without = [i + 1 for i, r in enumerate(rows) if not r.get("perturbed_answer")]
        shown = ", ".join(map(str, without[:5])) + (" ..." if len(without) > 5 else "")
        return "extra", (f"extra QA set: ROUGE-L and probability reported, not part of MU "
                         f"(no perturbed_answer in row {shown})")
    if kind == "qa":
        return "extra", f"extra QA set: KnowMem (KnowMem {name})"
    return "extra", f"extra text set: perplexity ({name} PPL)"


def forget_overlap_warning(rows: Sequence[dict], forget: Sequence[dict],
                           name: str = "forget_eval") -> str | None:
    """A warning when passages of a set that replaces the forget rows (VerbMem, PrivLeak)
    do not occur in the trained forget set, neither verbatim nor as a long stretch."""
    from sga_core.data.overlap import LONG_MATCH, not_found

    missing = not_found(rows, forget)
    if not missing:
        return None
    shown = ", ".join(str(i + 1) for i in missing[:5]) + (" ..." if len(missing) > 5 else "")
    return (f"{len(missing)} of {len(rows)} {name} passages do not occur in the trained "
            f"forget set (neither verbatim nor {LONG_MATCH}+ characters in a row; rows "
            f"{shown}): VerbMem and PrivLeak would measure text the models were not trained "
            "on")


def load_set(project_kind: str, name: str, path: str | Path,
             field_map: dict[str, str] | None = None):
    """The set's validated rows (a :class:`~sga_core.data.Dataset`), checked like forget data
    and for the kind its name needs (multiple-choice rows are welcome in a project of either
    kind); DataError (file, row, field) otherwise."""
    kind = set_kind(project_kind, name)
    if kind == "qa" and _has_choices(path, field_map):
        kind = "mc"
    return load_dataset(path, kind=kind, field_map=field_map)


def _has_choices(path, field_map: dict[str, str] | None) -> bool:
    """Whether a file's first record has ``choices`` (or a field mapped to it): its rows
    are multiple-choice rows, checked as such."""
    from sga_core.data import DataError
    from sga_core.data.loaders import load_records

    if "choices" in (field_map or {}).values():
        return True
    try:
        records = load_records(path)
    except DataError:
        return False  # the loader says what is wrong with the file
    return bool(records) and isinstance(records[0], dict) and "choices" in records[0]


@functools.lru_cache(maxsize=128)
def _summary(path: str, size: int, mtime_ns: int, inode: int, project_kind: str,
             name: str, protocol: str | None) -> tuple[int, str, str, str]:
    ds = load_dataset(path)
    role, what = role_of(project_kind, name, ds.rows, ds.kind, protocol)
    return len(ds), ds.kind, role, what


def set_summary(project_kind: str, name: str, path: str | os.PathLike,
                protocol: str | None = None) -> dict:
    """A saved set's ``rows``, ``kind``, ``role`` and ``what`` it is for, parsed once per
    file version (path, size, mtime, inode): the Data page lists the sets on every render,
    and a large set costs seconds to parse. A replaced or appended file is parsed again."""
    p = Path(path).resolve()
    st = p.stat()
    n, kind, role, what = _summary(str(p), st.st_size, st.st_mtime_ns, st.st_ino,
                                   project_kind, name, protocol)
    return {"rows": n, "kind": kind, "role": role, "what": what}


set_summary.cache_info = _summary.cache_info  # type: ignore[attr-defined]
set_summary.cache_clear = _summary.cache_clear  # type: ignore[attr-defined]


__all__ = ["RESERVED", "SET_NAME_RE", "TEXT_ROLES", "check_role_confirmed", "check_set_name",
           "forget_overlap_warning", "load_set", "project_role_words", "role_of", "role_words",
           "set_kind",
           "set_summary"]
