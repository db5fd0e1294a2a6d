"""Projects from benchmarks: TOFU, MUSE-News and MUSE-Books by name (through Hugging Face
``datasets``, :mod:`sga_core.data.hub`), and the copyright task from your own text files
(:mod:`sga_core.data.book`). Each writes a ready project: forget and retain data, the
evaluation sets, and the benchmark's evaluation protocol (``project.json`` ``protocol``,
which the project's runs evaluate with).

Each importable benchmark registers itself below (:func:`register_importer`: its name, the
page's label, its protocol, variants and a ``param()`` Config of its import options); the
``import`` command (choices, one flag per option) and the Data page's import panel (choice,
options form, uploads of its text files) read the registry."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sga_core.data.hub import BENCHMARKS, TOFU_SPLITS
from sga_core.params import ConfigError, from_dict, param
from sga_core.projects.create import create_project
from sga_core.projects.listing import check_name
from sga_core.projects.project import Project


def teller(progress) -> Callable[..., None]:
    """``progress(stage, done, total)`` (or nothing, for None) as ``say(stage, done=0,
    total=1)``: a stage not counted in parts is one step."""
    def say(stage: str, done: int = 0, total: int = 1) -> None:
        if progress is not None:
            progress(stage, done, total)
    return say


def import_benchmark(benchmark: str, name: str | None = None, *, variant: str | None = None,
                     folder: str | os.PathLike | None = None, online: bool = False,
                     k: int = 4, root=None, overwrite: bool = False, strict: bool = False,
                     first: int | None = None, subset: str = "evaluated",
                     retain_rows: int | None = None,
                     tokenizer: str = "embedded:smollm2", chunk_tokens: int | None = None,
                     study_splits: bool = False, progress=None) -> Project:
    """A project from TOFU (``variant``: forget01 / forget05 / forget10), MUSE-News or
    MUSE-Books: from a ``folder`` of its files, else through ``datasets`` (the hub when
    ``online``, else only the local HF cache). A required part that cannot be found raises
    :class:`~sga_core.data.hub.HubError` naming the dataset and the fix, with every missing
    optional part too; missing optional parts are imported without and listed in
    ``project.json`` ``import_notes`` (``strict``: refused instead). A text benchmark's raw
    text (a whole book in ``raw/forget.txt``, one long string of ``raw/retain2.json``) is cut
    into chunks of at most ``chunk_tokens`` tokens of ``tokenizer``'s tokenizer as MUSE
    trains on them (default: the protocol's sequence length, 2048;
    :func:`~sga_core.projects.benchmark_parts.cut_long_texts`); the data limits apply to the
    chunks. ``first``: keep N forget rows and the passages that lie in them, ``subset``
    "evaluated" (the rows that hold the VerbMem / PrivLeak passages first) or "first"
    (:func:`~sga_core.projects.benchmark_parts.first_articles`). ``retain_rows``: keep at
    most N retain rows, evenly spaced (:func:`~sga_core.projects.benchmark_parts.
    fewer_retain_rows`). ``study_splits``: also MUSE's scalability and sustainability splits
    (``scal`` / ``sust`` forget_1..4, :func:`~sga_core.data.hub.study_parts`), kept as the
    project's forget parts (``parts/scal/forget_1.jsonl`` ...; the missing ones listed in
    ``import_notes``). ``progress(stage, done,
    total)`` is told each stage and how far it is (done of total parts, texts or steps). A
    bad file is a DataError naming it by its path inside the folder; nothing
    is written then."""
    from sga_core.data.hub import get_benchmark, study_parts
    from sga_core.data.long_text import CHUNK_TOKENS
    from sga_core.projects.benchmark_parts import (
        cut_long_texts,
        fewer_retain_rows,
        first_articles,
        gather,
        is_study_part,
    )
    from sga_core.runs.leftovers import temp_dir

    say = teller(progress)
    chunk_tokens = CHUNK_TOKENS if chunk_tokens is None else chunk_tokens
    if isinstance(chunk_tokens, bool) or not isinstance(chunk_tokens, int) or \
            not 16 <= chunk_tokens <= 65536:
        raise ConfigError(f"chunk tokens: from 16 to 65536 tokens per chunk, got "
                          f"{chunk_tokens!r}")
    bench = get_benchmark(benchmark)
    variant = variant or (bench.variants[-1] if bench.variants else None)
    name = check_name(name or (f"{bench.name}-{variant}" if variant else bench.name))
    got = gather(bench, variant, folder=folder, online=online, strict=strict, progress=say,
                 extra=study_parts() if study_splits and bench.kind == "text" else None)
    if folder is not None and (other := named_for_another(bench.name, Path(folder))):
        got.notes.insert(0, f"the folder {Path(folder).name!r} is named for {other}, but "
                            f"{bench.name} was chosen: the project is labelled {bench.name} "
                            "and evaluated under its protocol; import it again with the "
                            "benchmark it holds if that was a slip")
    try:
        files = {role: part.path for role, part in got.loaded.items()}
        labels = {role: part.label for role, part in got.loaded.items()}
        where = str(folder) if folder is not None else bench.repo
        with temp_dir("hub") as tmp:
            if bench.kind == "text":
                files.update(cut_long_texts(got, tokenizer, chunk_tokens, tmp, labels, say))
            if first:
                say(f"choosing {first} forget rows")
                files.update(first_articles(got, first, tmp, labels, subset, dict(files)))
            if retain_rows:
                say(f"keeping {retain_rows} retain rows")
                files.update(fewer_retain_rows(got, retain_rows, tmp, labels, dict(files)))
            say("checking and writing the project")
            evals = {r: p for r, p in files.items()
                     if r not in ("forget", "retain") and not is_study_part(r) and p}
            project = create_project(
                name, files["forget"], files.get("retain"), kind=bench.kind, k=k, root=root,
                overwrite=overwrite, eval_sets=evals,
                forget_parts={r: p for r, p in files.items() if is_study_part(r)},
                # the file each came from (a folder's path, the hub's config/split)
                sources={r: f"{where}: {labels[r].removesuffix(f' ({bench.repo})')}"
                         for r in labels if r in ("forget", "retain") or is_study_part(r)},
                labels=labels,
                # one step: the project is written with its protocol, or not at all
                meta={"protocol": bench.protocol, "benchmark": bench.name, "variant": variant,
                      "benchmark_source": str(folder) if folder is not None else
                      f"{bench.repo} ({'hub' if online else 'local HF cache'})",
                      "import_notes": got.notes, "first_articles": first or None,
                      **({"subset": subset} if first else {}),
                      **({"retain_rows": retain_rows} if retain_rows else {}),
                      **({"chunk_tokens": chunk_tokens, "tokenizer": tokenizer}
                         if bench.kind == "text" else {})})
    finally:
        got.cleanup()
    return project


def named_for_another(benchmark: str, folder: Path) -> str | None:
    """The other MUSE benchmark a folder's name names (``MUSE-Books`` given for muse-news),
    else None: the two have the same layout, so a wrong choice imports without an error."""
    name = folder.expanduser().resolve().name.lower()
    for other, word in (("muse-books", "books"), ("muse-news", "news")):
        if other != benchmark and benchmark.startswith("muse") and word in name:
            return other
    return None


def import_copyright(name: str, book: str | os.PathLike, retain: str | os.PathLike, *,
                     model: str = "embedded:smollm2", segment_tokens: int = 512,
                     prompt_tokens: int = 200, k: int = 4, root=None,
                     overwrite: bool = False, progress=None) -> Project:
    """A copyright-task project from two text files (UTF-8, or UTF-16/32 with a BOM, as the
    data loaders read them): the ``book`` (split into segments of at most ``segment_tokens``
    tokens of ``model``'s tokenizer, each segment's first ``prompt_tokens`` tokens its
    prompt) and a ``retain`` corpus (segments likewise)."""
    from sga_core.data.book import book_rows, check_token_counts, corpus_rows, read_text_file
    from sga_core.fileio import atomic_write_jsonl
    from sga_core.model.loading import load_tokenizer
    from sga_core.runs.leftovers import temp_dir

    name = check_name(name)
    check_token_counts(segment_tokens, prompt_tokens)
    book_text, retain_text = read_text_file(book), read_text_file(retain)
    say = teller(progress)
    say(f"loading {model}'s tokenizer")
    tok = load_tokenizer(model)
    cutting = "cutting the book and the retain text into segments"
    say(cutting, 0, 2)
    with temp_dir("book") as tmp:
        forget_file, retain_file = Path(tmp) / "forget.jsonl", Path(tmp) / "retain.jsonl"
        atomic_write_jsonl(forget_file, book_rows(book_text, tok, segment_tokens,
                                                  prompt_tokens))
        say(cutting, 1, 2)
        atomic_write_jsonl(retain_file, corpus_rows(retain_text, tok, segment_tokens))
        say("checking and writing the project")
        project = create_project(name, forget_file, retain_file, kind="text", k=k, root=root,
                                 overwrite=overwrite,
                                 sources={"forget": Path(book).name,
                                          "retain": Path(retain).name},
                                 meta={"protocol": "copyright", "benchmark": "copyright",
                                       "segment_tokens": segment_tokens,
                                       "prompt_tokens": prompt_tokens, "tokenizer": model})
    return project


# ------------------------------------------------------------------ the registry ------------
@dataclass(frozen=True)
class Importer:
    """One importable benchmark: the ``import`` command's choice and the Data page's."""

    name: str
    label: str  # the page's choice
    protocol: str  # the evaluation protocol its projects get (a registered one)
    variants: tuple[str, ...]  # () = one variant
    config: type  # its import options: a dataclass of param() fields
    run: Callable[..., Project]  # run(name, config, *, root, overwrite, progress) -> Project
    # progress(stage, done, total): each stage, and done of its total parts, texts or steps
    files: tuple[str, ...] = ()  # settings that are text files: the page uploads them
    from_hub: bool = False  # its files come from the hub, the HF cache or a folder
    needs_name: bool = False  # no default project name

    def settings(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self.config)]


IMPORTERS: dict[str, Importer] = {}


def register_importer(name: str, config: type, *, label: str, protocol: str,
                      variants: tuple[str, ...] = (), files: tuple[str, ...] = (),
                      from_hub: bool = False, needs_name: bool = False):
    """Decorate a benchmark's ``run(name, config, *, root, overwrite, progress)``: register
    it (``progress(stage, done, total)``: a callable told each stage and how far it is, or
    None)."""
    def decorate(run: Callable[..., Project]) -> Callable[..., Project]:
        if name in IMPORTERS and IMPORTERS[name].run is not run:
            raise ValueError(f"benchmark {name!r} is registered twice")
        IMPORTERS[name] = Importer(name, label, protocol, variants, config, run, files,
                                   from_hub, needs_name)
        return run

    return decorate


def importer_names() -> list[str]:
    return list(IMPORTERS)


def benchmark_importers() -> list[Importer]:
    """Every importable benchmark (the registry), in the order the Data page offers them."""
    return list(IMPORTERS.values())


def get_importer(name: str) -> Importer:
    if name not in IMPORTERS:
        raise ConfigError(f"unknown benchmark {name!r} (known: {', '.join(IMPORTERS)})")
    return IMPORTERS[name]


def import_with(benchmark: str, name: str | None, options: dict | None = None, *,
                root=None, overwrite: bool = False, progress=None) -> Project:
    """Import ``benchmark`` with ``options`` (its Config's fields, checked and typed by it);
    ``progress(stage, done, total)`` is told each stage and how far it is (the import job's
    status, the page's progress bar)."""
    entry = get_importer(benchmark)
    config = from_dict(entry.config, options or {})
    return entry.run(name or None, config, root=root, overwrite=overwrite, progress=progress)


@dataclass
class HubImport:
    """Where a benchmark's files come from: the local Hugging Face cache (default), the hub
    (``online``) or a folder of its files."""

    from_folder: str | None = param(
        None, "A folder with the benchmark's files (<config>.json or <config>/<split>.jsonl "
              "...).", hidden=True)
    online: bool = param(False, "Allow downloading from the Hugging Face hub.", hidden=True)


@dataclass
class TofuImport(HubImport):
    """TOFU's import options: its source and the forget split."""

    split: str = param(TOFU_SPLITS[-1], "TOFU's forget split (with the matching retain "
                                        "split).", choices=TOFU_SPLITS[::-1],
                       label="forget split")
    strict: bool = param(False, "Refuse the import when the optional holdout split "
                                "(holdout01/05/10, the MIA attacks' non-members) is missing, "
                                "instead of importing without it.",
                         label="strict (every part required)")


@register_importer("tofu", TofuImport, label="TOFU (locuslab/TOFU)",
                   protocol=BENCHMARKS["tofu"].protocol, variants=BENCHMARKS["tofu"].variants,
                   from_hub=True)
def _import_tofu(name: str | None, config: TofuImport, *, root=None,
                 overwrite: bool = False, progress=None) -> Project:
    """TOFU through Hugging Face ``datasets`` (the hub, the local cache or a folder)."""
    return import_benchmark("tofu", name, variant=config.split, folder=config.from_folder,
                            online=config.online, root=root, overwrite=overwrite,
                            strict=config.strict, progress=progress)


@dataclass
class MuseImport(HubImport):
    """MUSE's import options: its source, a consistent subset, and strictness."""

    first: int = param(0, "Keep only N forget rows (articles, or chunks of a long text), "
                          "and the VerbMem / PrivLeak forget passages that lie in them "
                          "(0 = every row).",
                       min=0, label="N forget rows (0 = all)")
    subset: str = param("evaluated", "Which N forget rows: 'evaluated' = the rows that hold "
                                     "the VerbMem / PrivLeak passages first, then the first "
                                     "others (MUSE-Books' passages all lie near the book's "
                                     "end); 'first' = the first N (what is lost is listed).",
                        choices=("evaluated", "first"), label="subset of N rows")
    retain_rows: int = param(0, "Keep at most N retain rows (chunks of the retain text), "
                                "evenly spaced (0 = every row): on a CPU, Prepare's epochs "
                                "then go over the forget rows and a few retain rows, not "
                                "thousands, so the Original can memorise the forget rows.",
                             min=0, max=10_000_000, label="N retain rows (0 = all)")
    tokenizer: str = param("embedded:smollm2", "Whose tokenizer cuts long raw texts (a "
                                              "book) into chunks: the model you will train.",
                           label="tokenizer of")
    chunk_tokens: int = param(2048, "Tokens per chunk of a long raw text (MUSE's max_len).",
                              min=16, max=65536, label="tokens per chunk")
    strict: bool = param(False, "Refuse the import when an optional part (retain1, holdout, "
                                "the *_icl examples, ...) is missing, instead of importing "
                                "what is there.", label="strict (every part required)")
    study_splits: bool = param(False, "Also import MUSE's scalability and sustainability "
                                      "splits (scal and sust, forget_1..4: MUSE-News "
                                      "publishes them) as the project's forget parts, for "
                                      "the `sustain` command and the Results page's studies.",
                               label="scal / sust splits (studies)")


def _muse(benchmark: str):
    def run(name: str | None, config: MuseImport, *, root=None,
            overwrite: bool = False, progress=None) -> Project:
        """MUSE through Hugging Face ``datasets`` (the hub, the local cache) or a folder of
        its files (the hub's layout or the authors' own JSON files)."""
        return import_benchmark(benchmark, name, folder=config.from_folder,
                                online=config.online, root=root, overwrite=overwrite,
                                strict=config.strict, first=config.first or None,
                                subset=config.subset, retain_rows=config.retain_rows or None,
                                tokenizer=config.tokenizer,
                                chunk_tokens=config.chunk_tokens,
                                study_splits=config.study_splits, progress=progress)

    return run


for _name, _label in (("muse-news", "MUSE-News (muse-bench/MUSE-News)"),
                      ("muse-books", "MUSE-Books (muse-bench/MUSE-Books)")):
    register_importer(_name, MuseImport, label=_label, protocol=BENCHMARKS[_name].protocol,
                      variants=BENCHMARKS[_name].variants, from_hub=True)(_muse(_name))


@dataclass
class CopyrightImport:
    """The copyright task's import options: your own two text files and how they are cut."""

    book: str | None = param(None, "The book as a UTF-8 text file.", hidden=True,
                             label="book (.txt)")
    retain: str | None = param(None, "A retain corpus as a UTF-8 text file.", hidden=True,
                               label="retain corpus (.txt)")
    model: str = param("embedded:smollm2", "Whose tokenizer counts the segments' tokens.",
                       label="tokenizer of")
    # bounds: check_token_counts (a DataError naming the count) at import
    segment_tokens: int = param(512, "Tokens per segment at most (at least 2).",
                                label="tokens per segment")
    prompt_tokens: int = param(200, "Tokens of each segment's prompt, fewer than a segment's "
                                    "(FLAT's 200).", label="prompt tokens")


@register_importer("copyright", CopyrightImport,
                   label="Copyright task (your own book + retain text)", protocol="copyright",
                   files=("book", "retain"), needs_name=True)
def _import_copyright(name: str | None, config: CopyrightImport, *, root=None,
                      overwrite: bool = False, progress=None) -> Project:
    """The copyright task from your own book and retain text (nothing copyrighted ships)."""
    if not config.book or not config.retain or not name:
        raise ConfigError("import copyright needs --book BOOK.txt, --retain RETAIN.txt and "
                          "--name NAME (your own text files: nothing copyrighted ships)")
    return import_copyright(name, config.book, config.retain, model=config.model,
                            segment_tokens=config.segment_tokens,
                            prompt_tokens=config.prompt_tokens, root=root, overwrite=overwrite,
                            progress=progress)


@dataclass
class WmdpImport(HubImport):
    """WMDP's import options: its source, which forget corpora, how long texts are cut."""

    subset: str = param("cyber", "Which forget corpora: cyber (open-unlearning's data_split), "
                                 "bio (gated: its file is needed) or bio+cyber (WMDP's RMU); "
                                 "the retain corpora match.",
                        choices=("cyber", "bio", "bio+cyber"), label="forget corpora")
    tokenizer: str = param("embedded:smollm2", "Whose tokenizer cuts the corpora's long "
                                              "texts into chunks: the model you will train.",
                           label="tokenizer of")
    chunk_tokens: int = param(512, "Tokens per chunk of a long corpus text (open-unlearning's "
                                   "WMDP max_length).", min=16, max=65536,
                              label="tokens per chunk")
    strict: bool = param(False, "Refuse the import when a part (a retain corpus, a question "
                                "set, MMLU, the gated bio forget corpus) is missing, instead "
                                "of importing what is there.",
                         label="strict (every part required)")


@register_importer("wmdp", WmdpImport, label="WMDP (cais/wmdp, cais/wmdp-corpora, cais/mmlu)",
                   protocol="wmdp", variants=("cyber", "bio", "bio+cyber"), from_hub=True)
def _import_wmdp(name: str | None, config: WmdpImport, *, root=None,
                 overwrite: bool = False, progress=None) -> Project:
    """WMDP's corpora and questions, and MMLU, through Hugging Face ``datasets`` (the hub,
    the local cache) or a folder of their files (:mod:`sga_core.projects.wmdp`)."""
    from sga_core.projects.wmdp import import_wmdp

    return import_wmdp(name, subset=config.subset, folder=config.from_folder,
                       online=config.online, root=root, overwrite=overwrite,
                       tokenizer=config.tokenizer, chunk_tokens=config.chunk_tokens,
                       strict=config.strict, progress=progress)
