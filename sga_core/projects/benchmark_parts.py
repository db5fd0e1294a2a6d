"""A benchmark's parts as the researcher has them: every part that is there is loaded; the
optional ones that are not are reported all at once (what each is for, what the project will
lack), or refused together under ``strict``; and a consistent subset of MUSE, N forget rows
(News' articles, or chunks of Books' book), whose VerbMem and PrivLeak forget passages are
kept only where they are found verbatim in those rows (:mod:`sga_core.data.overlap`), as
MUSE derived them. Messages say "rows", which is true of both."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from sga_core.data.hub import Benchmark, HubError, Loaded, MissingPart, Part, load_named
from sga_core.text import plural

#: sets whose passages MUSE cut from the forget articles: a subset keeps those found in it
DERIVED_FROM_FORGET = ("forget_eval", "privleak_forget")
#: sets that cannot be matched to forget rows (questions): a subset keeps them whole
UNMATCHABLE = ("forget_qa",)
#: parts that are raw text MUSE trains or scores on in token chunks (a book is one text)
RAW_TEXT = ("forget", "retain", "holdout")
def is_study_part(role: str) -> bool:
    """Whether ``role`` is one of MUSE's study splits (``sust/forget_2``): raw forget text,
    cut into chunks like the forget set, kept as a forget part of the project."""
    return "/" in role


#: how a subset of N forget rows is chosen
SUBSET_CHOICES = ("evaluated", "first")


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
           strict: bool = False, progress=None, extra: list[Part] | None = None) -> Gathered:
    """Load every part that is there; a missing required part, or any missing part under
    ``strict``, raises one HubError naming every missing part (nothing is kept then).
    ``progress(stage, done, total)`` is told each part as it is read; ``extra``: more parts
    to load after the benchmark's own (MUSE's study splits, :func:`~sga_core.data.hub.
    study_parts`)."""
    out = Gathered()
    first: MissingPart | None = None  # the first missing required part (with its fix)
    required: list[Part] = []
    parts = bench.parts(variant) + list(extra or ())
    try:
        for i, part in enumerate(parts):
            if progress is not None:
                progress("reading the files", i, len(parts))
            try:
                got, name = load_named(bench, part, folder=folder, online=online,
                                       variant=variant)
            except MissingPart as exc:
                if part.optional:
                    out.missing.append(part)
                else:
                    first = first or exc
                    required.append(part)
                continue
            out.loaded[part.role] = got
            if name != part:
                out.notes.append(f"{part.where} read from {name.where} (its name in this "
                                 "release of the benchmark)")
        if first is not None and first.wrong_folder:
            # the folder given is not the benchmark's: the hint is the whole story (every
            # optional part is "missing" from a wrong folder too)
            raise HubError(str(first))
        if required or (strict and out.missing):
            lines = [str(first)] if first else ["missing (strict import):"]
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


def cut_long_texts(got: Gathered, tokenizer: str, chunk_tokens: int,
                   tmp: str | os.PathLike, labels: dict[str, str],
                   progress=None) -> dict[str, Path]:
    """The raw text parts (:data:`RAW_TEXT`) cut into chunks of at most ``chunk_tokens``
    tokens of ``tokenizer``'s tokenizer, as MUSE trains on them
    (:mod:`sga_core.data.long_text`): a ``.txt`` file is one text, a JSON list of strings one
    text each. Writes the chunk rows under ``tmp``; returns role -> file for the parts it
    cut (and adds a note for each), and loads the tokenizer only when a text is long
    enough to need it. ``progress(stage, done, total)`` is told each part as it is read and
    cut (done of the raw text parts)."""
    from sga_core.data.long_text import chunk_records, needs_cutting, read_long_records
    from sga_core.fileio import atomic_write_jsonl

    out: dict[str, Path] = {}
    tok = None
    roles = [role for role in got.loaded if role in RAW_TEXT or is_study_part(role)]
    for i, role in enumerate(roles):
        where = labels.get(role, role)
        if progress is not None:
            progress(f"cutting {where} into {chunk_tokens}-token chunks", i, len(roles))
        records = read_long_records(got.loaded[role].path, where)
        if not needs_cutting(records, chunk_tokens):
            continue
        if tok is None:
            from sga_core.model.loading import load_tokenizer

            tok = load_tokenizer(tokenizer)
        rows, cut, longest = chunk_records(records, tok, chunk_tokens)
        if not cut:
            continue
        out[role] = Path(tmp) / f"{role.replace('/', '-')}-chunks.jsonl"
        atomic_write_jsonl(out[role], rows)
        got.notes.append(f"{where}: {plural(cut, 'long text')} (the longest {longest:,} "
                         f"characters) cut into chunks of at most {chunk_tokens} tokens of "
                         f"{tokenizer}'s tokenizer, as MUSE trains on them: "
                         f"{plural(len(records), 'text')} -> {plural(len(rows), 'row')}")
    if out:
        from sga_core.config import TrainingArgs

        default = TrainingArgs().max_length
        if default < chunk_tokens:
            got.notes.append(f"a run trains on at most training.max_length tokens of each "
                             f"chunk ({default} by default): set it to {chunk_tokens} to "
                             f"train on whole chunks, as MUSE does (memory grows with it)")
    return out


def _spans(forget_texts: list[str], rows: list[dict]) -> list[tuple[int, ...] | None]:
    """For each evaluation passage, the forget rows it lies in (one row, or neighbouring
    rows when it crosses the cut between two chunks of one text); None: in none."""
    from bisect import bisect_right

    from sga_core.data.overlap import passage, squeeze

    texts = [squeeze(t) for t in forget_texts]
    starts, pos = [], 0
    for t in texts:
        starts.append(pos)
        pos += len(t) + 1
    joined = " ".join(texts)
    out: list[tuple[int, ...] | None] = []
    for row in rows:
        found = None
        for form in passage(row):
            at = joined.find(form) if form else -1
            if at >= 0:
                first = bisect_right(starts, at) - 1
                last = bisect_right(starts, at + len(form) - 1) - 1
                found = tuple(range(first, last + 1))
                break
        out.append(found)
    return out


def _ranges(indices: list[int]) -> str:
    """0-based indices as 1-based row ranges: "3-5, 9"."""
    parts, run = [], []
    for i in sorted(indices):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            parts.append(f"{run[0] + 1}-{run[-1] + 1}" if len(run) > 1 else f"{run[0] + 1}")
        run = [i]
    if run:
        parts.append(f"{run[0] + 1}-{run[-1] + 1}" if len(run) > 1 else f"{run[0] + 1}")
    return ", ".join(parts)


def part_rows(got: Gathered, role: str, labels: dict[str, str],
              files: dict[str, Path] | None = None) -> list[dict]:
    """The rows of one part: ``files``' rewritten file for it (cut into chunks) when there
    is one, else the loaded file; a bad file is a DataError naming the part as the folder
    does (``labels``)."""
    from sga_core.data import load_dataset
    from sga_core.data.errors import DataError

    try:
        return load_dataset((files or {}).get(role) or got.loaded[role].path).rows
    except DataError as exc:
        raise DataError(exc.reason, labels.get(role, exc.file), exc.row, exc.field) from None


def first_articles(got: Gathered, n: int, tmp: str | os.PathLike,
                   labels: dict[str, str], choose: str = "evaluated",
                   files: dict[str, Path] | None = None) -> dict[str, Path]:
    """Keep ``n`` forget rows (articles, or chunks of a long text): ``choose`` "first", the
    first ``n``; "evaluated" (default), the rows that hold the VerbMem and PrivLeak forget
    passages first (MUSE-Books' passages all lie near the book's end, past any first N),
    then the first others. The sets cut from the forget text keep the passages that lie in
    the kept rows. Writes the kept rows under ``tmp``; returns role -> file for the roles
    it changed (None: a set left out), and adds one note per set saying what remains and,
    when something is lost, what is lost and how many rows would keep it. ``files``: the
    parts already rewritten (cut into chunks), read instead of the loaded files."""
    from sga_core.fileio import atomic_write_jsonl

    def rows(role: str) -> list[dict]:
        return part_rows(got, role, labels, files)

    if n < 1:
        raise HubError(f"first {n}: keep at least 1 forget row")
    if choose not in SUBSET_CHOICES:
        raise HubError(f"subset {choose!r}: choose one of {', '.join(SUBSET_CHOICES)}")
    forget = rows("forget")
    texts = [str(r.get("text") or (str(r.get("prompt") or "") + " " +
                                    str(r.get("continuation") or ""))) for r in forget]
    derived = {role: rows(role) for role in DERIVED_FROM_FORGET if role in got.loaded}
    spans = {role: _spans(texts, set_rows) for role, set_rows in derived.items()}
    keep: set[int] = set()
    if choose == "evaluated":
        for role in DERIVED_FROM_FORGET:  # VerbMem's passages first, then PrivLeak's
            for span in spans.get(role, []):
                if span and len(keep | set(span)) <= n:
                    keep |= set(span)
    for i in range(len(forget)):
        if len(keep) >= n:
            break
        keep.add(i)
    kept_idx = sorted(keep)
    kept_forget = [forget[i] for i in kept_idx]
    out = {"forget": Path(tmp) / "forget.jsonl"}
    atomic_write_jsonl(out["forget"], kept_forget)
    if n > len(forget):  # never capped silently
        got.notes.append(f"subset: N = {n} forget rows asked for, but the forget data has "
                         f"only {len(forget)} rows: all {len(forget)} are kept")
    elif kept_idx == list(range(len(kept_idx))):
        got.notes.append(f"subset: the first {plural(len(kept_forget), 'forget row')} of "
                         f"{len(forget)}")
    else:
        got.notes.append(f"subset: {plural(len(kept_forget), 'forget row')} of {len(forget)}, "
                         f"chosen to hold the VerbMem / PrivLeak forget passages: rows "
                         f"{_ranges(kept_idx)}")
    for role, all_rows in derived.items():
        where = labels.get(role, role)
        located = [s for s in spans[role] if s]
        needed = len({i for s in located for i in s})
        kept = [r for r, s in zip(all_rows, spans[role]) if s and set(s) <= keep]
        other = "" if choose == "evaluated" else " with subset of N rows 'evaluated'"
        flags = f"--first {needed}" + ("" if choose == "evaluated" else " --subset evaluated")
        lost = (f"; keeping all {len(located)} found in the forget rows takes "
                f"{plural(needed, 'row')}: set N forget rows to {needed}{other} (the CLI's "
                f"{flags})" if located and len(kept) < len(located) else "")
        if not kept:
            got.notes.append(f"subset: {where} left out: none of its {len(all_rows)} passages "
                             f"lies in the kept forget rows{lost}")
            out[role] = None  # type: ignore[assignment]
            continue
        out[role] = Path(tmp) / f"{role}.jsonl"
        atomic_write_jsonl(out[role], kept)
        got.notes.append(f"subset: {where}: {len(kept)} of {len(all_rows)} passages kept "
                         f"(found verbatim in the kept rows){lost}")
    for role in UNMATCHABLE:
        if role in got.loaded:
            got.notes.append(f"subset: {labels.get(role, role)}: every question kept; "
                             "questions cannot be matched to forget rows, so some may be "
                             "about rows left out")
    return out


def fewer_retain_rows(got: Gathered, n: int, tmp: str | os.PathLike, labels: dict[str, str],
                      files: dict[str, Path] | None = None) -> dict[str, Path]:
    """Keep at most ``n`` retain rows (chunks of a long retain text), evenly spaced over the
    whole set, as ``eval.max_rows`` takes its rows: a CPU's Prepare then runs epochs over the
    forget rows and a few retain rows, not thousands. Writes them under ``tmp``; returns
    {"retain": file} (nothing without a retain set) and adds a note saying how many of how
    many were kept. ``files``: the parts already rewritten (cut into chunks)."""
    from sga_core.evaluation.common import retain_subset
    from sga_core.fileio import atomic_write_jsonl

    if n < 1:
        raise HubError(f"retain rows {n}: keep at least 1 retain row (0 = all)")
    if not (files or {}).get("retain") and "retain" not in got.loaded:
        return {}
    rows = part_rows(got, "retain", labels, files)
    if n >= len(rows):
        got.notes.append(f"subset: N = {n} retain rows asked for, but the retain data has "
                         f"only {len(rows)} rows: all {len(rows)} are kept")
        return {}
    out = Path(tmp) / "retain-subset.jsonl"
    atomic_write_jsonl(out, [rows[i] for i in retain_subset(len(rows), n)])
    got.notes.append(f"subset: {plural(n, 'retain row')} of {len(rows)}, evenly spaced")
    return {"retain": out}
