"""Benchmark data through Hugging Face ``datasets``: TOFU and MUSE-News by name, from the
hub when online, from the local HF cache or a folder of files when offline.

A benchmark is a list of :class:`Part` (one hub config + split each) and the role each
plays in a workbench project (forget data, retain data, an evaluation set). The configs are
the ones the benchmarks' own code loads:

- TOFU (``locuslab/TOFU``; TOFU ``config/eval_everything.yaml``, open-unlearning
  ``configs/data/datasets/TOFU_*``): ``forget01/05/10_perturbed`` (the forget rows with
  their paraphrased and perturbed answers), the matching ``retain99/95/90``,
  ``retain_perturbed`` (the retain rows the evaluation scores), ``real_authors_perturbed``
  and ``world_facts_perturbed``, and the optional ``holdout01/05/10`` (question + answer
  rows about authors never trained on, the match of the forget split: open-unlearning
  ``configs/data/datasets/TOFU_MIA.yaml``, the MIA attacks' non-members); every config has
  one split, ``train``.
- MUSE-News and MUSE-Books (``muse-bench/MUSE-News``, ``muse-bench/MUSE-Books``;
  open-unlearning ``configs/data/datasets/MUSE_*``; the authors' own JSON files, where
  ``raw`` and ``privleak`` are plain lists of strings): ``raw`` forget / retain1 (training),
  ``verbmem`` forget (prompt + gt), ``privleak`` holdout (else ``raw`` holdout) and forget,
  ``knowmem`` forget_qa / retain_qa with their ICL splits. Older releases' split names are
  understood: ``retain2`` for ``retain1``, ``retain2_qa`` (and ``retain2_qa_icl``) for
  ``retain_qa``. Every part but ``raw`` forget is optional (:attr:`Part.optional`): a
  missing one is reported with what it is for and what the project lacks without it.

MUSE-News also publishes the scalability and sustainability splits (configs ``scal`` and
``sust``, splits ``forget_1`` .. ``forget_4``, rows ``{text}``; the authors' own
``data/news/scal|sust/forget_<k>.json``, plain lists of strings): ``scal`` holds forget sets
of growing size (889, 1,778, 2,667 and 3,554 articles; ``forget_1`` is ``raw/forget``), ``sust``
four folds of about 889 articles each, unlearned one after another as requests.
:func:`study_parts` names them (role ``<config>/<split>``, all optional); MUSE-Books publishes
none.

``datasets`` is imported only inside :func:`load_part`. A folder holds one file per part,
named ``<config>.<ext>`` (one-split configs such as TOFU's, the way TOFU's hub repository
stores them), ``<config>/<split>.<ext>`` or ``<config>-<split>.<ext>``, or the hub's own
parquet layout ``<config>/<split>-*.parquet`` (the shards ``-00000-of-00002`` ... of one
split, read in order and concatenated); ``ext`` is json, jsonl, parquet, csv or txt (MUSE-Books
publishes ``raw/forget.txt``: a raw text file is one long text, cut into token chunks at import,
:mod:`sga_core.data.long_text`). Two files
for one split (``raw/forget.json`` beside ``raw/forget.jsonl``) are an error naming both,
and a symbolic link leading outside the folder is refused; every message names a file by
its path inside the folder (``raw/forget.jsonl`` and ``verbmem/forget.jsonl`` differ).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from sga_core.data.errors import DataError

EXTENSIONS = (".json", ".jsonl", ".parquet", ".csv", ".txt")  # .txt: MUSE-Books' raw files
TOFU_SPLITS = ("forget01", "forget05", "forget10")


class HubError(ValueError):
    """A benchmark that cannot be loaded; the message names the dataset and the fix."""


class MissingPart(HubError):
    """A part that is not in the folder, or that the hub or the cache does not have;
    ``wrong_folder``: another folder near the one given holds it (the message says which)."""

    def __init__(self, message: str, wrong_folder: bool = False):
        super().__init__(message)
        self.wrong_folder = wrong_folder


@dataclass(frozen=True)
class Part:
    """One file of a benchmark: its role in the project and where it comes from; an
    optional part may be missing (``purpose``: what it is for; ``lacking``: what a project
    without it lacks); ``older``: other (config, split) names it has had, tried in order
    when the first is not there."""

    role: str  # "forget", "retain", or an evaluation set's name
    config: str
    split: str = "train"
    optional: bool = False
    purpose: str = ""
    lacking: str = ""
    older: tuple[tuple[str, str], ...] = ()

    @property
    def where(self) -> str:
        return f"{self.config}/{self.split}"

    def names(self) -> list[Part]:
        """This part under each name it may have (the current one first)."""
        return [self] + [dataclasses.replace(self, config=c, split=s, older=())
                         for c, s in self.older]


def muse_parts() -> list[Part]:
    """MUSE's parts (News and Books alike): only ``raw/forget`` is required."""
    def opt(role, config, split, purpose, lacking, older=()):
        return Part(role, config, split, True, purpose, lacking, older)

    return [
        Part("forget", "raw", "forget", purpose="the forget texts (training data)"),
        opt("retain", "raw", "retain1", "the retain texts (GradDiff, KL, prepare's "
            "retained model; retain PPL)", "no retain data: prepare, GradDiff and KL cannot "
            "run, retain PPL is not computed", (("raw", "retain2"),)),
        opt("forget_eval", "verbmem", "forget", "VerbMem's forget passages (prompt + gt) "
            "and PrivLeak's members", "VerbMem and PrivLeak read the raw forget texts "
            "instead (split after 15 words), unlike MUSE's numbers"),
        opt("holdout", "privleak", "holdout", "texts never trained on: the non-members of "
            "MIA AUC and PrivLeak, and PPL", "no MIA AUC, PrivLeak or holdout PPL",
            (("raw", "holdout"),)),
        opt("privleak_forget", "privleak", "forget", "MUSE's PrivLeak forget passages (their "
            "perplexity is reported)", "no perplexity of MUSE's PrivLeak forget passages"),
        opt("forget_qa", "knowmem", "forget_qa", "KnowMem forget: questions about the forget "
            "texts", "no KnowMem forget column"),
        opt("forget_qa_icl", "knowmem", "forget_qa_icl", "few-shot examples for KnowMem "
            "forget (the MUSE protocol)", "KnowMem forget is asked zero-shot (not MUSE's "
            "few-shot prompts)"),
        opt("retain_qa", "knowmem", "retain_qa", "KnowMem retain: questions about the "
            "retain texts", "no KnowMem retain column", (("knowmem", "retain2_qa"),)),
        opt("retain_qa_icl", "knowmem", "retain_qa_icl", "few-shot examples for KnowMem "
            "retain (the MUSE protocol)", "KnowMem retain is asked zero-shot (not MUSE's "
            "few-shot prompts)", (("knowmem", "retain2_qa_icl"),)),
    ]


#: MUSE's studies: the config of each and what its forget_1..4 are
STUDIES = {"scal": "scalability: forget sets of growing size, each unlearned from the Original",
           "sust": "sustainability: folds unlearned one after another, each run starting "
                   "from the last"}
STUDY_SPLITS = tuple(f"forget_{k}" for k in range(1, 5))


def study_parts() -> list[Part]:
    """MUSE's scal and sust splits (role ``scal/forget_1`` ...), every one optional: a
    missing one is reported with the others (MUSE-Books publishes none)."""
    return [Part(f"{config}/{split}", config, split, True,
                 f"request {split[-1]} of MUSE's {what.split(':')[0]} study",
                 f"no {config} {split} for a {what.split(':')[0]} study")
            for config, what in STUDIES.items() for split in STUDY_SPLITS]


@dataclass(frozen=True)
class Benchmark:
    name: str
    repo: str
    kind: str  # "qa" or "text"
    protocol: str  # the evaluation protocol its projects get
    variants: tuple[str, ...]  # TOFU's forget splits; () = one variant
    title: str

    def parts(self, variant: str | None = None) -> list[Part]:
        if self.name == "tofu":
            split = variant or "forget10"
            if split not in TOFU_SPLITS:
                raise HubError(f"TOFU forget split {split!r}: choose one of "
                               f"{', '.join(TOFU_SPLITS)}")
            retain = f"retain{100 - int(split[-2:]):02d}"
            return [Part("forget", f"{split}_perturbed"), Part("retain", retain),
                    Part("retain_eval", "retain_perturbed"),
                    Part("real_authors", "real_authors_perturbed"),
                    Part("world_facts", "world_facts_perturbed"),
                    Part("holdout", f"holdout{split[-2:]}", optional=True,
                         purpose="questions about authors never trained on (the match of "
                                 "the forget split): the non-members of the MIA AUCs and "
                                 "PrivLeak", lacking="no MIA AUC or PrivLeak")]
        return muse_parts()


BENCHMARKS = {
    "tofu": Benchmark("tofu", "locuslab/TOFU", "qa", "tofu", TOFU_SPLITS,
                      "TOFU: fictitious authors (entity unlearning)"),
    "muse-news": Benchmark("muse-news", "muse-bench/MUSE-News", "text", "muse", (),
                           "MUSE-News: BBC news (the MUSE benchmark)"),
    "muse-books": Benchmark("muse-books", "muse-bench/MUSE-Books", "text", "muse", (),
                            "MUSE-Books: the Harry Potter books (the MUSE benchmark)"),
}


def get_benchmark(name: str) -> Benchmark:
    key = (name or "").strip().lower().replace("_", "-")
    key = {"muse": "muse-news"}.get(key, key)
    if key not in BENCHMARKS:
        raise HubError(f"unknown benchmark {name!r} (known: {', '.join(BENCHMARKS)}, and "
                       "`copyright` from your own text files)")
    return BENCHMARKS[key]


SHARD_RE = re.compile(r"-(\d+)-of-(\d+)\.parquet$")


@dataclass(frozen=True)
class Loaded:
    """One part as a local file: ``label`` names it in messages (its path inside the
    imported folder); ``temp`` is a folder to remove once the project is written."""

    path: Path
    label: str
    temp: Path | None = None


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _check_inside(root: Path, path: Path) -> None:
    """Refuse ``path`` when it, or a folder on its way down from ``root``, is a symbolic
    link leading outside ``root``; the message names the link."""
    real_root = root.resolve()
    cur = root
    for name in path.relative_to(root).parts:
        cur = cur / name
        if not cur.is_symlink():
            continue
        try:
            target = cur.resolve(strict=False)
        except (RuntimeError, OSError):  # RuntimeError: Python 3.11's "Symlink loop"
            raise HubError(f"{_rel(root, cur)}: a symbolic link that leads back to itself "
                           "(a loop); refused") from None
        if not target.is_relative_to(real_root):
            raise HubError(f"{_rel(root, cur)}: a symbolic link leading outside the imported "
                           "folder; refused (copy the file into the folder instead)")


def _shards(root: Path, part: Part) -> list[Path]:
    """The hub's parquet shards of ``part`` in order; a gap in ``-NNNNN-of-MMMMM`` names
    the missing shard."""
    folder = root / part.config
    if not folder.is_dir():
        return []
    shards = sorted(p for p in folder.glob(f"{part.split}-*.parquet")
                    if p.is_file() or p.is_symlink())
    numbered = [SHARD_RE.search(p.name) for p in shards]
    odd = [p for p, m in zip(shards, numbered) if not m]
    if odd and len(odd) < len(shards):  # numbered shards and a file that is none of them
        raise HubError(f"{_rel(root, odd[0])}: not one of the numbered parquet shards of "
                       f"split {part.split!r} beside it ({part.split}-NNNNN-of-MMMMM.parquet); "
                       "remove it or the shards")
    if shards and all(numbered):
        # in the order of their numbers: 'forget-2-of-12' comes before 'forget-10-of-12'
        order = sorted(range(len(shards)), key=lambda i: int(numbered[i].group(1)))
        shards, numbered = [shards[i] for i in order], [numbered[i] for i in order]
        totals = {m.group(2) for m in numbered}
        have = {int(m.group(1)) for m in numbered}
        total = max(int(t) for t in totals)
        width = len(numbered[0].group(1))
        missing = [i for i in range(total) if i not in have]
        if missing or len(totals) > 1 or len(have) != len(shards) or max(have) >= total:
            gap = (f"{part.config}/{part.split}-{missing[0]:0{width}d}-of-"
                   f"{total:0{len(numbered[0].group(2))}d}.parquet is missing" if missing
                   else "the shards' numbers do not make one series")
            raise HubError(f"{_rel(root, shards[0])}: {len(shards)} parquet shards of split "
                           f"{part.split!r}, but {gap}")
    return shards


def folder_files(folder: str | os.PathLike, part: Part) -> list[Path]:
    """The files of ``part`` in a local folder (see the module docstring): one file, the
    hub's shards in order, or [] when there is none. Two candidates, or a link leading
    outside the folder, raise :class:`HubError` naming them."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        return []
    names = []
    for ext in EXTENSIONS:
        names += [f"{part.config}/{part.split}{ext}", f"{part.config}-{part.split}{ext}"]
        if part.split == "train":
            names.append(f"{part.config}{ext}")
    found = [root / n for n in names if (root / n).is_file() or (root / n).is_symlink()]
    shards = _shards(root, part)
    for path in found + shards:
        _check_inside(root, path)
    candidates = [_rel(root, p) for p in found]
    if shards:
        more = f" (and {len(shards) - 1} more shards)" if len(shards) > 1 else ""
        candidates.append(_rel(root, shards[0]) + more)
    if len(candidates) > 1:
        raise HubError(f"{' and '.join(candidates)}: {len(candidates)} files for config "
                       f"{part.config!r}, split {part.split!r}; keep one (a split is one "
                       "file, or the hub's parquet shards)")
    return found or shards


def folder_file(folder: str | os.PathLike, part: Part) -> Path | None:
    """The first file of ``part`` in a local folder (:func:`folder_files`), or None."""
    files = folder_files(folder, part)
    return files[0] if files else None


def _concatenated(root: Path, part: Part, shards: list[Path]) -> Loaded:
    """The shards' rows, each shard validated (errors name the shard and its own row), in
    one temporary JSONL file."""
    from sga_core.data.loaders import load_dataset
    from sga_core.fileio import atomic_write_jsonl

    rows: list[dict] = []
    for shard in shards:
        try:
            rows += load_dataset(shard).rows
        except DataError as exc:
            raise DataError(exc.reason, _rel(root, shard), exc.row, exc.field) from None
    from sga_core.runs.leftovers import make_temp_dir

    temp = make_temp_dir("shards")
    try:
        path = atomic_write_jsonl(temp / f"{part.split}.jsonl", rows)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return Loaded(path, f"{part.config}/{part.split}-*.parquet ({len(shards)} shards)", temp)


def expected_names(part: Part) -> str:
    """The file names a folder may hold for ``part`` (for messages)."""
    one = f"{part.config}.json, " if part.split == "train" else ""
    return f"{one}{part.config}/{part.split}.jsonl (or .json/.txt/.parquet/.csv)"


@contextlib.contextmanager
def network(online: bool):
    """Let ``datasets`` reach the hub (``online``) or only its local cache, for the block:
    the environment and, when already imported, datasets' and huggingface_hub's flags."""
    keys = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    saved = {k: os.environ.get(k) for k in keys}
    flag = "0" if online else "1"
    patched = []
    for k in keys:
        os.environ[k] = flag
    import sys

    for mod, attrs in (("datasets.config", keys), ("huggingface_hub.constants", keys[:1])):
        m = sys.modules.get(mod)
        for a in attrs:
            if m is not None and hasattr(m, a):
                patched.append((m, a, getattr(m, a)))
                setattr(m, a, not flag == "0")
    try:
        yield
    finally:
        for m, a, v in patched:
            setattr(m, a, v)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _fix(bench: Benchmark, part: Part, variant: str | None) -> str:
    cmd = f"python -m sga_core import {bench.name}" + (f" --split {variant}" if variant else "")
    return (f"Fix: with network, run `{cmd} --online` once (it also fills the local cache); "
            f"or put the files in a folder and run `{cmd} --from-folder FOLDER` (this part: "
            f"{expected_names(part)})")


def hub_rows(repo: str, config: str, split: str) -> list[dict]:
    """The rows of one hub config + split through ``datasets.load_dataset`` (the hub or its
    local cache, as :func:`network` allows). The seam the tests replace."""
    import datasets

    ds = datasets.load_dataset(repo, config, split=split)
    return ds.to_list()


def _elsewhere(root: Path, part: Part) -> str:
    """A hint where a folder misses a part that the folder above it, or one folder inside
    it, holds (the benchmark's raw/ subfolder given for the benchmark's folder)."""
    try:
        inside = sorted(d for d in root.iterdir() if d.is_dir())[:50]
    except OSError:
        inside = []
    for other in (root.parent, *inside):
        try:
            if other != root and folder_files(other, part):
                return f" (the folder {other} holds it: did you mean that folder?)"
        except HubError:
            continue
    return ""


def load_part(bench: Benchmark, part: Part, *, folder: str | os.PathLike | None = None,
              online: bool = False, variant: str | None = None) -> Loaded:
    """One part as a local data file (a folder's own file, its shards concatenated, or the
    hub rows written to a temporary JSONL): the caller validates it with
    :func:`sga_core.data.load_dataset`, naming it by the returned label."""
    where = f"{bench.repo} (config {part.config!r}, split {part.split!r})"
    if folder is not None:
        root = Path(folder).expanduser()
        files = folder_files(root, part)
        if not files:
            if root.is_file():
                raise HubError(f"{folder}: a file, not a folder; give the folder that holds "
                               f"the benchmark's files (this part: {expected_names(part)})")
            if not root.is_dir():
                raise HubError(f"{folder}: no such folder")
            hint = _elsewhere(root, part)
            raise MissingPart(f"{where}: no file for it in {folder}; expected "
                              f"{expected_names(part)}{hint}", wrong_folder=bool(hint))
        if len(files) > 1:
            return _concatenated(root, part, files)
        return Loaded(files[0], _rel(root, files[0]))
    try:
        with network(online):
            rows = hub_rows(bench.repo, part.config, part.split)
    except ImportError:
        raise HubError("the `datasets` package is not installed (pip install "
                       "datasets==5.2.0)") from None
    except Exception as exc:  # noqa: BLE001 - offline / not cached / not found
        msg = " ".join(str(exc).split())[:240]
        state = ("is not in the local Hugging Face cache and the hub is offline" if not online
                 else "could not be loaded from the hub")
        raise MissingPart(f"{where} {state} ({type(exc).__name__}: {msg}). "
                          f"{_fix(bench, part, variant)}") from None
    if not rows:
        raise DataError(f"{where}: no rows")
    from sga_core.fileio import atomic_write_jsonl
    from sga_core.runs.leftovers import make_temp_dir

    tmp = make_temp_dir("hub") / f"{part.config}-{part.split}.jsonl"
    atomic_write_jsonl(tmp, rows)
    return Loaded(tmp, f"{part.config}/{part.split} ({bench.repo})", tmp.parent)


def load_named(bench: Benchmark, part: Part, *, folder: str | os.PathLike | None = None,
               online: bool = False, variant: str | None = None) -> tuple[Loaded, Part]:
    """:func:`load_part` under the part's current name, else under each older name it has
    had (``raw/retain2``, ``knowmem/retain2_qa``); returns the file and the name it was
    found under. MissingPart (the current name's) when none is there."""
    first: MissingPart | None = None
    for name in part.names():
        try:
            return load_part(bench, name, folder=folder, online=online, variant=variant), name
        except MissingPart as exc:
            first = first or exc
    assert first is not None
    raise first
