"""Projects from benchmarks: TOFU and MUSE-News by name (through Hugging Face ``datasets``,
:mod:`sga_core.data.hub`), and the copyright task from your own text files
(:mod:`sga_core.data.book`). Each writes a ready project: forget and retain data, the
evaluation sets, and the benchmark's evaluation protocol (``project.json`` ``protocol``,
which the project's runs evaluate with)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sga_core.projects.project import Project, check_name, create_project


def import_benchmark(benchmark: str, name: str | None = None, *, variant: str | None = None,
                     folder: str | os.PathLike | None = None, online: bool = False,
                     k: int = 4, root=None, overwrite: bool = False) -> Project:
    """A project from TOFU (``variant``: forget01 / forget05 / forget10) or MUSE-News: from a
    ``folder`` of its files, else through ``datasets`` (the hub when ``online``, else only
    the local HF cache). A part that cannot be found raises :class:`~sga_core.data.hub.
    HubError` naming the dataset and the fix; a bad file a DataError naming it by its path
    inside the folder; nothing is written then."""
    from sga_core.data.hub import get_benchmark, load_part

    bench = get_benchmark(benchmark)
    variant = variant or (bench.variants[-1] if bench.variants else None)
    name = check_name(name or (f"{bench.name}-{variant}" if variant else bench.name))
    loaded = {}
    try:
        for part in bench.parts(variant):
            loaded[part.role] = load_part(bench, part, folder=folder, online=online,
                                          variant=variant)
        files = {role: got.path for role, got in loaded.items()}
        where = str(folder) if folder is not None else bench.repo
        evals = {r: p for r, p in files.items() if r not in ("forget", "retain")}
        project = create_project(
            name, files["forget"], files["retain"], kind=bench.kind, k=k, root=root,
            overwrite=overwrite, eval_sets=evals,
            sources={"forget": f"{where}: {bench.parts(variant)[0].config}",
                     "retain": f"{where}: {bench.parts(variant)[1].config}"},
            labels={role: got.label for role, got in loaded.items()})
    finally:
        for got in loaded.values():
            if got.temp is not None:
                shutil.rmtree(got.temp, ignore_errors=True)
    project.update_meta(protocol=bench.protocol, benchmark=bench.name, variant=variant,
                        benchmark_source=str(folder) if folder is not None else
                        f"{bench.repo} ({'hub' if online else 'local HF cache'})")
    return project


def import_copyright(name: str, book: str | os.PathLike, retain: str | os.PathLike, *,
                     model: str = "embedded:smollm2", segment_tokens: int = 512,
                     prompt_tokens: int = 200, k: int = 4, root=None,
                     overwrite: bool = False) -> Project:
    """A copyright-task project from two text files (UTF-8, or UTF-16/32 with a BOM, as the
    data loaders read them): the ``book`` (split into segments of at most ``segment_tokens``
    tokens of ``model``'s tokenizer, each segment's first ``prompt_tokens`` tokens its
    prompt) and a ``retain`` corpus (segments likewise)."""
    from sga_core.data.book import book_rows, check_token_counts, corpus_rows, read_text_file
    from sga_core.fileio import atomic_write_jsonl
    from sga_core.leftovers import temp_dir
    from sga_core.model.loading import load_tokenizer

    name = check_name(name)
    check_token_counts(segment_tokens, prompt_tokens)
    book_text, retain_text = read_text_file(book), read_text_file(retain)
    tok = load_tokenizer(model)
    with temp_dir("book") as tmp:
        forget_file, retain_file = Path(tmp) / "forget.jsonl", Path(tmp) / "retain.jsonl"
        atomic_write_jsonl(forget_file, book_rows(book_text, tok, segment_tokens,
                                                  prompt_tokens))
        atomic_write_jsonl(retain_file, corpus_rows(retain_text, tok, segment_tokens))
        project = create_project(name, forget_file, retain_file, kind="text", k=k, root=root,
                                 overwrite=overwrite,
                                 sources={"forget": Path(book).name,
                                          "retain": Path(retain).name})
    project.update_meta(protocol="copyright", benchmark="copyright",
                        segment_tokens=segment_tokens, prompt_tokens=prompt_tokens,
                        tokenizer=model)
    return project
