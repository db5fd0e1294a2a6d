"""Benchmark data through Hugging Face ``datasets``: TOFU and MUSE-News by name, from the
hub when online, from the local HF cache or a folder of files when offline.

A benchmark is a list of :class:`Part` (one hub config + split each) and the role each
plays in a workbench project (forget data, retain data, an evaluation set). The configs are
the ones the benchmarks' own code loads:

- TOFU (``locuslab/TOFU``; TOFU ``config/eval_everything.yaml``, open-unlearning
  ``configs/data/datasets/TOFU_*``): ``forget01/05/10_perturbed`` (the forget rows with
  their paraphrased and perturbed answers), the matching ``retain99/95/90``,
  ``retain_perturbed`` (the retain rows the evaluation scores), ``real_authors_perturbed``
  and ``world_facts_perturbed``; every config has one split, ``train``.
- MUSE-News (``muse-bench/MUSE-News``; open-unlearning ``configs/data/datasets/MUSE_*``):
  ``raw`` forget / retain1 (training) / holdout, ``verbmem`` forget (prompt + gt),
  ``knowmem`` forget_qa / retain_qa with their ICL splits, ``privleak`` holdout.

``datasets`` is imported only inside :func:`load_part`. A folder holds one file per part,
named ``<config>.<ext>`` (one-split configs such as TOFU's, the way TOFU's hub repository
stores them), ``<config>/<split>.<ext>`` or ``<config>-<split>.<ext>``, or the hub's own
parquet layout ``<config>/<split>-*.parquet``; ``ext`` is json, jsonl, parquet or csv.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sga_core.data.errors import DataError

EXTENSIONS = (".json", ".jsonl", ".parquet", ".csv")
TOFU_SPLITS = ("forget01", "forget05", "forget10")


class HubError(ValueError):
    """A benchmark that cannot be loaded; the message names the dataset and the fix."""


@dataclass(frozen=True)
class Part:
    """One file of a benchmark: its role in the project and where it comes from."""

    role: str  # "forget", "retain", or an evaluation set's name
    config: str
    split: str = "train"


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
                    Part("world_facts", "world_facts_perturbed")]
        return [Part("forget", "raw", "forget"), Part("retain", "raw", "retain1"),
                Part("forget_eval", "verbmem", "forget"),
                Part("holdout", "privleak", "holdout"),
                Part("forget_qa", "knowmem", "forget_qa"),
                Part("forget_qa_icl", "knowmem", "forget_qa_icl"),
                Part("retain_qa", "knowmem", "retain_qa"),
                Part("retain_qa_icl", "knowmem", "retain_qa_icl")]


BENCHMARKS = {
    "tofu": Benchmark("tofu", "locuslab/TOFU", "qa", "tofu", TOFU_SPLITS,
                      "TOFU: fictitious authors (entity unlearning)"),
    "muse-news": Benchmark("muse-news", "muse-bench/MUSE-News", "text", "muse", (),
                           "MUSE-News: BBC news (the MUSE benchmark)"),
}


def get_benchmark(name: str) -> Benchmark:
    key = (name or "").strip().lower().replace("_", "-")
    key = {"muse": "muse-news"}.get(key, key)
    if key not in BENCHMARKS:
        raise HubError(f"unknown benchmark {name!r} (known: {', '.join(BENCHMARKS)}, and "
                       "`copyright` from your own text files)")
    return BENCHMARKS[key]


def folder_file(folder: str | os.PathLike, part: Part) -> Path | None:
    """The file of ``part`` in a local folder (see the module docstring), or None."""
    root = Path(folder).expanduser()
    for ext in EXTENSIONS:
        names = [f"{part.config}/{part.split}{ext}", f"{part.config}-{part.split}{ext}"]
        if part.split == "train":
            names.append(f"{part.config}{ext}")
        for name in names:
            if (root / name).is_file():
                return root / name
    shards = sorted((root / part.config).glob(f"{part.split}-*.parquet")) \
        if (root / part.config).is_dir() else []
    return shards[0] if len(shards) == 1 else None


def expected_names(part: Part) -> str:
    """The file names a folder may hold for ``part`` (for messages)."""
    one = f"{part.config}.json, " if part.split == "train" else ""
    return f"{one}{part.config}/{part.split}.jsonl (or .json/.parquet/.csv)"


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


def load_part(bench: Benchmark, part: Part, *, folder: str | os.PathLike | None = None,
              online: bool = False, variant: str | None = None) -> Path:
    """One part as a local data file (a folder's own file, or the hub rows written to a
    temporary JSONL): the caller validates it with :func:`sga_core.data.load_dataset`."""
    where = f"{bench.repo} (config {part.config!r}, split {part.split!r})"
    if folder is not None:
        path = folder_file(folder, part)
        if path is None:
            if not Path(folder).expanduser().is_dir():
                raise HubError(f"{folder}: no such folder")
            raise HubError(f"{where}: no file for it in {folder}; expected "
                           f"{expected_names(part)}")
        return path
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
        raise HubError(f"{where} {state} ({type(exc).__name__}: {msg}). "
                       f"{_fix(bench, part, variant)}") from None
    if not rows:
        raise DataError(f"{where}: no rows")
    from sga_core.fileio import atomic_write_jsonl

    tmp = Path(tempfile.mkdtemp(prefix="sga-hub-")) / f"{part.config}-{part.split}.jsonl"
    atomic_write_jsonl(tmp, rows)
    return tmp
