"""WMDP (Li et al. 2024, hazardous knowledge) as a project: the forget and retain corpora as
its text data, the multiple-choice questions and MMLU as its evaluation sets, under the
``wmdp`` protocol (:mod:`sga_core.metrics.multiple_choice`). Registered as the ``wmdp``
importer in :mod:`sga_core.projects.benchmarks`.

Where each part comes from, as published (the hub, the local Hugging Face cache, or one
folder holding the files under these names, :func:`sga_core.data.hub.folder_files`):

- ``cais/wmdp-corpora`` configs ``cyber-forget-corpus``, ``cyber-retain-corpus`` and
  ``bio-retain-corpus`` (split ``train``, rows ``{"text"}``; a folder's
  ``cyber-forget-corpus.jsonl`` ..., as WMDP's RMU code and open-unlearning's
  ``configs/data/datasets/WMDP_*.yaml`` name them);
- the bio forget corpus is gated (``cais/wmdp-bio-forget-corpus``, given on request): read
  from a folder's ``bio-forget-corpus.jsonl``, or the hub when the account has access;
  without it the bio forget texts are left out and the import says so;
- ``cais/wmdp`` configs ``wmdp-bio``, ``wmdp-cyber``, ``wmdp-chem`` (split ``test``, rows
  ``{"question", "choices", "answer"}``) -> the sets ``wmdp_bio``, ``wmdp_cyber``,
  ``wmdp_chem``;
- ``cais/mmlu`` config ``all`` (split ``test``, rows ``{"question", "subject", "choices",
  "answer"}``) -> the set ``mmlu`` (utility).

The forget texts are those of the chosen subsets (``cyber``, as open-unlearning's
``data_split``; ``bio``; or both, as WMDP's RMU unlearns them), the retain texts the
matching retain corpora; long texts are cut into chunks of ``chunk_tokens`` tokens (512:
open-unlearning's WMDP datasets) as MUSE's are
(:func:`~sga_core.projects.benchmark_parts.cut_long_texts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sga_core.data.hub import Benchmark, HubError, Loaded, MissingPart, Part, load_named
from sga_core.projects.benchmark_parts import Gathered, cut_long_texts
from sga_core.projects.project import Project

NAME = "wmdp"
QUESTIONS, CORPORA, MMLU = "cais/wmdp", "cais/wmdp-corpora", "cais/mmlu"
BIO_FORGET = "cais/wmdp-bio-forget-corpus"  # gated: given on request
SUBSETS = ("cyber", "bio", "bio+cyber")
CHUNK_TOKENS = 512  # open-unlearning configs/data/datasets/WMDP_*.yaml max_length
GATED = (f"the bio forget corpus is gated ({BIO_FORGET}: request access on its hub page, "
         "then import with --online while logged in, or put its file in the folder as "
         "bio-forget-corpus.jsonl, rows {\"text\": ...})")


@dataclass(frozen=True)
class Source:
    """One published file: its hub repository and config (``hub_config``: the config the
    hub knows it by, when a folder names it otherwise), the role it plays, what it is for
    and what a project without it lacks."""

    repo: str
    config: str
    split: str
    role: str
    purpose: str
    lacking: str
    hub_config: str | None = None

    def part(self, hub: bool) -> Part:
        config = self.hub_config if hub and self.hub_config else self.config
        return Part(self.role, config, self.split, True, self.purpose, self.lacking)


def corpus(subset: str, which: str) -> Source:
    """The forget or retain corpus of ``bio`` or ``cyber``."""
    if subset == "bio" and which == "forget":
        return Source(BIO_FORGET, "bio-forget-corpus", "train", "forget",
                      "the bio forget texts (training data)",
                      "no bio forget texts: " + GATED, hub_config="default")
    return Source(CORPORA, f"{subset}-{which}-corpus", "train", which,
                  f"the {subset} {which} texts (training data)",
                  f"no {subset} {which} texts")


def question_sources() -> list[Source]:
    """WMDP's three question sets and MMLU (the evaluation sets)."""
    out = [Source(QUESTIONS, f"wmdp-{s}", "test", f"wmdp_{s}",
                  f"WMDP's {s} questions (forget quality: accuracy, lower is better)",
                  f"no WMDP-{s} accuracy") for s in ("bio", "cyber", "chem")]
    return out + [Source(MMLU, "all", "test", "mmlu", "MMLU's questions (utility)",
                         "no MMLU accuracy (utility)")]


def _load(src: Source, folder, online: bool) -> Loaded:
    bench = Benchmark(NAME, src.repo, "text", NAME, (), "WMDP")
    return load_named(bench, src.part(folder is None), folder=folder, online=online)[0]


def _text_rows(loaded: list[tuple[Source, Loaded]]) -> list[dict]:
    """The texts of the corpora, one after the other, as text rows (any length); a corpus
    without one ``text`` is a DataError naming its file."""
    from sga_core.data.errors import DataError
    from sga_core.data.long_text import read_long_records

    rows = []
    for _src, got in loaded:
        texts = [r["text"] for r in read_long_records(got.path, got.label)
                 if isinstance(r.get("text"), str) and r["text"].strip()]
        if not texts:
            raise DataError("no rows with a 'text' field (WMDP's corpora are {\"text\": ...} "
                            "rows)", got.label)
        rows += [{"text": t} for t in texts]
    return rows


def import_wmdp(name: str | None, *, subset: str = "cyber", folder=None, online: bool = False,
                root=None, overwrite: bool = False, tokenizer: str = "embedded:smollm2",
                chunk_tokens: int = CHUNK_TOKENS, strict: bool = False,
                progress=None) -> Project:
    """A WMDP project (see the module docstring): ``subset`` chooses the forget texts
    (``cyber``, ``bio`` or ``bio+cyber``). Every part is looked for; what is missing is
    listed in ``import_notes`` (``strict``: refused instead), and a subset with no forget
    texts at all is refused naming each one missing and the fix. Nothing is written then."""
    from sga_core.fileio import atomic_write_jsonl
    from sga_core.projects.create import create_project
    from sga_core.projects.listing import check_name
    from sga_core.runs.leftovers import temp_dir

    def say(stage: str, done: int = 0, total: int = 1) -> None:
        if progress is not None:
            progress(stage, done, total)

    if subset not in SUBSETS:
        raise HubError(f"WMDP subset {subset!r}: choose one of {', '.join(SUBSETS)}")
    if folder is not None and not Path(folder).expanduser().is_dir():
        raise HubError(f"{folder}: no such folder (the folder that holds WMDP's files)")
    name = check_name(name or f"wmdp-{subset.replace('+', '-')}")
    parts = subset.split("+")
    wanted = ([corpus(s, "forget") for s in parts] + [corpus(s, "retain") for s in parts]
              + question_sources())
    got, missing, why = Gathered(), [], {}
    found: dict[str, list[tuple[Source, Loaded]]] = {}
    try:
        for i, src in enumerate(wanted):
            say("reading the files", i, len(wanted))
            try:
                one = _load(src, folder, online)
            except MissingPart as exc:
                missing.append(src)
                why[src.config] = str(exc)
                continue
            found.setdefault(src.role, []).append((src, one))
        for loaded in found.values():
            got.loaded.update({f"{s.role}:{s.config}": g for s, g in loaded})
        lines = [f"{s.repo} {s.config}/{s.split} ({s.purpose}): {s.lacking}" for s in missing]
        if "forget" not in found:
            first = next(why[c.config] for c in wanted if c.role == "forget")
            gated = [GATED] if "bio" in parts else []
            raise HubError("\n".join([f"no WMDP forget texts for {subset}: {first}", *gated,
                                      "missing:", *("  " + m for m in lines)]))
        if strict and missing:
            raise HubError("\n".join(["missing (strict import):", *("  " + m for m in lines)]))
        notes = ([f"imported without {len(missing)} part(s) (--strict refuses this):"] +
                 ["  " + m for m in lines]) if missing else []
        with temp_dir("hub") as tmp:
            files, labels = {}, {}
            for role in ("forget", "retain"):
                if role not in found:
                    continue
                files[role] = Path(tmp) / f"{role}.jsonl"
                atomic_write_jsonl(files[role], _text_rows(found[role]))
                labels[role] = " + ".join(g.label for _, g in found[role])
            cut = Gathered({r: Loaded(p, labels[r]) for r, p in files.items()}, [], notes)
            files.update(cut_long_texts(cut, tokenizer, chunk_tokens, tmp, labels, say))
            evals = {}
            for role, [(_src, part)] in ((r, x) for r, x in found.items()
                                         if r not in ("forget", "retain")):
                evals[role], labels[role] = part.path, part.label
            say("checking and writing the project")
            where = str(folder) if folder is not None else "the hub" if online else \
                "the local HF cache"
            return create_project(
                name, files["forget"], files.get("retain"), kind="text", root=root,
                overwrite=overwrite, eval_sets=evals, labels=labels,
                sources={r: f"{where}: {labels[r]}" for r in ("forget", "retain")
                         if r in files},
                meta={"protocol": NAME, "benchmark": NAME, "variant": subset,
                      "benchmark_source": where, "import_notes": cut.notes,
                      "chunk_tokens": chunk_tokens, "tokenizer": tokenizer})
    finally:
        got.cleanup()


__all__ = ["CHUNK_TOKENS", "SUBSETS", "import_wmdp"]
