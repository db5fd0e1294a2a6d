"""Field mapping at import: a file whose fields have other names (TOFU's own forget01.json
says ``prompt`` / ``response``) is read as if they had the workbench's names
(docs/spec.md#32-field-mapping).

A mapping is ``{file field: workbench field}``, e.g. ``{"prompt": "question", "response":
"answer"}``. It renames fields before the rows are validated, and every error it causes, or
that validation finds in a mapped field, is a :class:`DataError` naming the file, the row and
the *file's* field (with the workbench name it was mapped to), so a person can find it in
their own file.

:func:`inspect_fields` reads a file's fields and says which required ones are missing, with
suggestions (:func:`suggest_map`) the Data page offers as defaults; the CLI takes the same
mapping as ``--map prompt=question`` (:func:`parse_map`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sga_core.data.checks import check_field_name
from sga_core.data.errors import DataError, short
from sga_core.text import printable

#: the workbench's fields per data kind, required first (docs/spec.md#32-field-mapping)
TARGETS: dict[str, tuple[str, ...]] = {
    "qa": ("question", "answer", "paraphrased_answer", "perturbed_answer",
           "paraphrased_question"),
    "text": ("text", "prompt", "continuation"),
}
#: what a row needs, per kind (text: ``text``, or ``continuation`` with an optional prompt)
REQUIRED: dict[str, tuple[str, ...]] = {"qa": ("question", "answer"), "text": ("text",)}
#: other names datasets use for each field (lower case), in order of preference
SYNONYMS: dict[str, tuple[str, ...]] = {
    "question": ("prompt", "query", "input", "instruction", "q", "question_text",
                 "user", "source"),
    "answer": ("response", "output", "completion", "target", "a", "answer_text",
               "gold", "reference", "label", "assistant", "reply"),
    "paraphrased_answer": ("paraphrased_response", "paraphrase", "paraphrased_output"),
    "perturbed_answer": ("perturbed_response", "perturbed_responses", "perturbed_answers",
                         "perturbed", "negative_answers", "distractors", "wrong_answers"),
    "paraphrased_question": ("paraphrased_prompt", "paraphrased_query"),
    "text": ("content", "body", "document", "passage", "article", "story"),
    "continuation": ("gt", "completion", "target", "suffix"),
}


def check_map(mapping: Mapping[str, str] | Iterable[tuple[str, str]] | None,
              kind: str | None = None) -> dict[str, str]:
    """A clean mapping ``{file field: workbench field}`` (identity entries dropped) from a
    dict or from ``(file field, workbench field)`` pairs (what a person chose per workbench
    field, where one file field may have been chosen twice). A target that is not a workbench
    field (of ``kind``, when given), two fields mapped to one target, or one file field
    chosen for two targets is a :class:`DataError` naming the fields."""
    out: dict[str, str] = {}
    known = TARGETS.get(kind or "", tuple(dict.fromkeys(t for ts in TARGETS.values()
                                                        for t in ts)))
    pairs = list(mapping.items()) if isinstance(mapping, Mapping) else list(mapping or [])
    chosen: dict[str, str] = {}  # file field -> the first workbench field it was chosen for
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise DataError(f"field mapping: expected (file field, workbench field) pairs, "
                            f"got {short(pair)}")
        source, target = pair
        if not isinstance(source, str) or not source.strip():
            raise DataError(f"field mapping: a source field name must be a non-empty string, "
                            f"got {short(source)}")
        try:
            check_field_name(source, None)
        except DataError as exc:
            raise DataError(f"field mapping: {exc.reason}", field=source) from None
        if not isinstance(target, str) or target not in known:
            raise DataError(f"field mapping: {short(target)} is not a field the workbench "
                            f"reads; use one of {', '.join(known)}", field=source)
        if chosen.setdefault(source, target) != target:
            raise DataError(f"field mapping: the file field '{source}' is chosen for both "
                            f"'{chosen[source]}' and '{target}'; each field of the file can "
                            "be read as one workbench field only", field=source)
        if source == target:
            continue
        clash = next((s for s, t in out.items() if t == target), None)
        if clash is not None:
            raise DataError(f"field mapping: both '{printable(clash)}' and '{printable(source)}' "
                            f"are mapped to "
                            f"'{target}'", field=source)
        out[source] = target
    return out


def apply_map(records: Sequence[dict[str, Any]], mapping: Mapping[str, str] | None,
              file: str | None = None, rows: Sequence[int] | None = None
              ) -> list[dict[str, Any]]:
    """``records`` with their fields renamed by ``mapping`` (new dicts; the input is kept).
    A record that holds both a mapped field and, separately, the field it is mapped to is a
    :class:`DataError` (one value would silently be lost), and so is a mapping onto a field
    every row needs (:data:`NEEDED`) from a field no row has (a typo such as ``Prompt`` for
    ``prompt``). A mapping onto an optional field may name a field the file lacks: one
    mapping then serves files with and without it."""
    mapping = check_map(mapping)
    if not mapping:
        return list(records)
    _check_sources(records, mapping, file)
    rows = list(rows) if rows is not None else list(range(1, len(records) + 1))
    renamed_away = set(mapping)
    out = []
    for rec, row in zip(records, rows):
        new = {k: v for k, v in rec.items() if k not in renamed_away}
        for source, target in mapping.items():
            if source not in rec:
                continue
            if target in new:
                raise DataError(f"holds both '{source}' and '{target}'; mapping '{source}' to "
                                f"'{target}' would lose one of them", file, row, source)
            new[target] = rec[source]
        out.append(new)
    return out


#: the fields a row cannot do without: mapping one of them from a missing field is an error
NEEDED = ("question", "answer", "text")


def _check_sources(records, mapping: Mapping[str, str], file: str | None) -> None:
    if not records:
        return
    present = set(file_fields(records))
    for source, target in mapping.items():
        if target not in NEEDED or source in present:
            continue
        near = [f for f in present if f.casefold() == source.casefold()]
        hint = f"; did you mean '{printable(near[0])}'?" if near else ""
        fields = ", ".join(f"'{printable(f)}'" for f in file_fields(records)[:12])
        raise DataError(f"field mapping {printable(source)}={target}: no row has a field "
                        f"'{printable(source)}' (the file's fields: {fields}){hint}", file,
                        None, source)


def translate(err: DataError, mapping: Mapping[str, str] | None) -> DataError:
    """``err`` about a mapped workbench field, restated with the file's own field name."""
    back = {t: s for s, t in (mapping or {}).items()}
    if err.field in back:
        return DataError(f"{err.reason} (mapped to '{err.field}')", err.file, err.row,
                         back[err.field])
    return err


def parse_map(items: Iterable[str] | None) -> dict[str, str]:
    """``["prompt=question", "response=answer"]`` (the CLI's ``--map`` flags) as a mapping;
    a malformed item is a :class:`DataError`."""
    pairs: list[tuple[str, str]] = []  # a file field given twice is refused, not replaced
    for item in items or []:
        source, sep, target = str(item).partition("=")
        if not sep or not source.strip() or not target.strip():
            raise DataError(f"--map {short(item)}: expected FILE_FIELD=WORKBENCH_FIELD, e.g. "
                            "prompt=question")
        pairs.append((source.strip(), target.strip()))
    return check_map(pairs)


def file_fields(records: Sequence[dict[str, Any]]) -> list[str]:
    """Every field name of the records, in order of first appearance."""
    return list(dict.fromkeys(k for rec in records for k in rec))


def missing_required(fields: Iterable[str], kind: str) -> list[str]:
    """The required workbench fields of ``kind`` that ``fields`` lack (text rows may instead
    have ``continuation``, with or without ``prompt``; MUSE's ``gt`` counts)."""
    have = set(fields)
    if kind == "text":
        return [] if have & {"text", "continuation", "gt"} else ["text"]
    return [f for f in REQUIRED[kind] if f not in have]


def suggest_map(fields: Sequence[str], kind: str) -> dict[str, str]:
    """A proposed mapping for a file with ``fields``: each workbench field the file lacks
    gets the first of its usual other names that the file has (case-insensitive), each file
    field used once."""
    lower = {f.lower(): f for f in fields}
    present = set(fields)
    out: dict[str, str] = {}
    for target in TARGETS[kind]:
        if target in present or (kind == "text" and target == "continuation" and "gt" in
                                 present):
            continue
        for name in SYNONYMS.get(target, ()):
            source = lower.get(name)
            if source and source not in out and source not in TARGETS[kind]:
                out[source] = target
                break
    if kind == "text" and "text" in out.values() and "continuation" in out.values():
        out = {s: t for s, t in out.items() if t != "text"}  # a prefix/continuation pair wins
    return out


@dataclass
class FieldReport:
    """What a data file offers for mapping: its fields and rows, its kind once ``mapping`` is
    applied (None while required fields are missing), the required fields still missing, and
    suggested mapping entries for them (and for optional fields) of the kind ``target``."""

    file: str
    rows: int
    fields: list[str]
    kind: str | None
    missing: list[str]
    suggested: dict[str, str] = field(default_factory=dict)
    target: str = "qa"


def inspect_fields(path, kind: str = "auto", mapping: Mapping[str, str] | None = None
                   ) -> FieldReport:
    """Read a data file's fields (DataError when the file itself cannot be read) and judge
    them for ``kind`` ('auto', 'qa' or 'text') after ``mapping``."""
    from sga_core.data.formats import read_raw

    raw = read_raw(path)
    fields = file_fields(raw.records)
    mapping = check_map(mapping)
    mapped = [mapping.get(f, f) for f in fields]
    unmapped = [f for f in fields if f not in mapping]
    # as loaders.detect_kind judges a file: QA first, then text
    detected = next((k for k in ("qa", "text") if not missing_required(mapped, k)), None)
    want = kind if kind != "auto" else detected
    if want is None:  # offer the kind whose suggestions complete the file; QA by default
        text_ok = not missing_required(mapped + list(suggest_map(unmapped, "text").values()),
                                       "text")
        qa_ok = not missing_required(mapped + list(suggest_map(unmapped, "qa").values()), "qa")
        want = "text" if text_ok and not qa_ok else "qa"
    missing = missing_required(mapped, want)
    # suggestions for missing required fields, and for optional ones under another name
    # (perturbed_response -> perturbed_answer) even when nothing required is missing
    return FieldReport(raw.file, len(raw.records), fields, want if not missing else None,
                       missing, suggest_map(unmapped, want), want)

__all__ = ["REQUIRED", "SYNONYMS", "TARGETS", "FieldReport", "apply_map", "check_map",
           "file_fields", "inspect_fields", "missing_required", "parse_map", "suggest_map",
           "translate"]
