"""A benchmark's parts as the researcher has them: every part that is there is loaded; the
optional ones that are not are reported all at once (what each is for, what the project will
lack), or refused together under ``strict``; and a consistent subset of MUSE, "the first N
forget articles", whose VerbMem and PrivLeak forget passages are kept only where they are
found verbatim in those articles (:mod:`sga_core.data.overlap`), as MUSE derived them."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from sga_core.data.hub import Benchmark, HubError, Loaded, MissingPart, Part, load_named
from sga_core.text import plural

#: sets whose passages MUSE cut from the forget articles: a subset keeps those found in it
DERIVED_FROM_FORGET = ("forget_eval", "privleak_forget")
#: sets that cannot be matched to articles (questions): a subset keeps them whole
UNMATCHABLE = ("forget_qa",)


@dataclass
class Gathered:
    """The parts found (role -> file), the optional ones missing, and what to tell."""

    loaded: dict[str, Loaded] = field(default_factory=dict)
    missing: list[Part] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def cleanup(self) -> None:
        for got in self.loaded.values():
            if got.temp is not None:
                shutil.rmtree(got.temp, ignore_errors=True)


def missing_lines(missing: list[Part]) -> list[str]:
    """One line per missing optional part: where, what it is for, what the project lacks."""
    return [f"{p.where} ({p.purpose}): {p.lacking}" for p in missing]


def gather(bench: Benchmark, variant: str | None, *, folder=None, online: bool = False,
           strict: bool = False) -> Gathered:
    """Load every part that is there; a missing required part, or any missing part under
    ``strict``, raises one HubError naming every missing part (nothing is kept then)."""
    out = Gathered()
    first: str | None = None  # the first missing required part's message (with its fix)
    required: list[Part] = []
    try:
        for part in bench.parts(variant):
            try:
                got, name = load_named(bench, part, folder=folder, online=online,
                                       variant=variant)
            except MissingPart as exc:
                if part.optional:
                    out.missing.append(part)
                else:
                    first = first or str(exc)
                    required.append(part)
                continue
            out.loaded[part.role] = got
            if name != part:
                out.notes.append(f"{part.where} read from its older name {name.where}")
        if required or (strict and out.missing):
            lines = [first] if first else ["missing (strict import):"]
            if len(required) > 1:
                lines.append("also missing (required): " +
                             ", ".join(p.where for p in required[1:]))
            if required and out.missing:
                lines.append(f"and {plural(len(out.missing), 'optional part')} missing:")
            raise HubError("\n".join(lines + ["  " + m for m in missing_lines(out.missing)]))
    except BaseException:
        out.cleanup()
        raise
    if out.missing:
        out.notes.append(f"imported without {plural(len(out.missing), 'optional part')} "
                         "(--strict refuses this):")
        out.notes += ["  " + m for m in missing_lines(out.missing)]
    return out


def first_articles(got: Gathered, n: int, tmp: str | os.PathLike,
                   labels: dict[str, str]) -> dict[str, Path]:
    """Keep the first ``n`` forget articles; the sets cut from them keep the passages found
    verbatim in those articles. Writes the kept rows under ``tmp``; returns role -> file
    for the roles it changed, and adds one note per set saying how many rows remain."""
    from sga_core.data import load_dataset
    from sga_core.data.errors import DataError
    from sga_core.data.overlap import corpus, found_verbatim
    from sga_core.fileio import atomic_write_jsonl

    def rows(role: str) -> list[dict]:
        try:
            return load_dataset(got.loaded[role].path).rows
        except DataError as exc:
            raise DataError(exc.reason, labels.get(role, exc.file), exc.row,
                            exc.field) from None

    if n < 1:
        raise HubError(f"first {n}: keep at least 1 forget article")
    forget = rows("forget")
    kept_forget = forget[:n]
    out = {"forget": Path(tmp) / "forget.jsonl"}
    atomic_write_jsonl(out["forget"], kept_forget)
    got.notes.append(f"subset: the first {plural(len(kept_forget), 'forget article')} of "
                     f"{len(forget)}")
    haystack = corpus(kept_forget)
    for role in DERIVED_FROM_FORGET:
        if role not in got.loaded:
            continue
        all_rows = rows(role)
        kept = [r for r in all_rows if found_verbatim(r, haystack)]
        where = labels.get(role, role)
        if not kept:
            got.notes.append(f"subset: {where}: none of its {len(all_rows)} passages is "
                             "found verbatim in those articles; the set is left out")
            out[role] = None  # type: ignore[assignment]
            continue
        out[role] = Path(tmp) / f"{role}.jsonl"
        atomic_write_jsonl(out[role], kept)
        got.notes.append(f"subset: {where}: {len(kept)} of {len(all_rows)} passages kept "
                         "(found verbatim in those articles)")
    for role in UNMATCHABLE:
        if role in got.loaded:
            got.notes.append(f"subset: {labels.get(role, role)}: every question kept; "
                             "questions cannot be matched to articles, so some may be about "
                             "articles left out")
    return out
