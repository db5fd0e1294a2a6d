"""The hostile suite (docs/spec.md#34-formats-errors-and-bounds): 200+ generated hostile files
through the loaders (``load_dataset``, ``create_project``, ``NormalTable.load``,
``Project.import_normals``, the preset validator, ``import_benchmark`` from a benchmark folder, the
copyright import's book reader). Each must end as a clear DataError / ConfigError / HubError naming
the file (and the row and field where one applies; in a folder, the path relative to it) or a
correct load: never another exception, never a file written on failure, never a project that fails
to reload."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest

from sga_core.config import ConfigError
from sga_core.data import DataError, NormalTable, load_dataset
from sga_core.data.hub import HubError
from sga_core.presets import load_preset
from sga_core.projects import create_demo_project, create_project, load_project
from sga_core.projects.benchmarks import import_benchmark
from tests.helpers.hostile_corpus import NOT_CHECKED, Hostile, hostile_files, representative


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder below ``root`` (hidden ones too) with its size and mtime."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            st = path.lstat()
            out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


class Outcome(Exception):
    """An outcome the suite counts against the file (message says what went wrong)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def check_error(f: Hostile, exc: Exception, secret_dir: Path) -> None:
    """A clear error: names the file's base name, never a server-side folder, and the row
    and field the corpus expects."""
    message = str(exc)
    if f.target == "folder":  # the paths inside the imported folder, never the folder
        missing = [n for n in f.names if n not in message]
        if missing or str(f.path) in message or "\n" in message:
            raise Outcome("unclear", f"does not name {missing}: {message[:300]!r}")
        return
    if f.path.name not in message or str(secret_dir) in message or "\n" in message:
        raise Outcome("unclear", f"unclear message: {message[:200]!r}")
    if isinstance(exc, DataError):
        if exc.file != f.path.name:
            raise Outcome("unclear", f"file {exc.file!r} in {message[:200]!r}")
        for what, want, got in (("row", f.row, exc.row), ("field", f.field, exc.field)):
            if want != NOT_CHECKED and want != got:
                raise Outcome("unexpected", f"{what} {got!r}, expected {want!r}: {message[:200]}")


def run_dataset(f: Hostile, name: str, ws: Path) -> str:
    try:
        rows = load_dataset(f.path).rows
    except DataError as exc:
        first = exc
        rows = None
    before = tree(ws)
    try:
        create_project(name, f.path, root=ws)
    except DataError as exc:
        if rows is not None:
            raise Outcome("unexpected", f"loads but create_project refused: {exc}") from None
        if tree(ws) != before:
            raise Outcome("written", "create_project wrote files on failure") from None
        assert str(first) == str(exc)
        raise
    if rows is None:
        raise Outcome("unexpected", f"create_project took a file load_dataset refused: {first}")
    try:
        again = load_project(name, ws)
        assert again.forget() == rows and again.retain() == [] and again.normals() is None
    except Exception as exc:
        raise Outcome("reload", f"project fails to reload: {type(exc).__name__}: {exc}") \
            from None
    return "loaded"


def run_normals(f: Hostile, ws: Path) -> str:
    project = load_project("demo", ws)
    try:
        NormalTable.load(f.path)  # without the project's bounds: a clear answer either way
    except DataError:
        pass
    before = tree(ws)
    try:
        table = project.import_normals(f.path)
    except DataError:
        if tree(ws) != before:
            raise Outcome("written", "import_normals wrote files on failure") from None
        raise
    try:
        again = load_project("demo", ws)
        assert again.normals().answers == table.answers and len(again.forget()) == 10
        assert len(again.retain()) == 110
    except Exception as exc:
        raise Outcome("reload", f"project fails to reload: {type(exc).__name__}: {exc}") \
            from None
    return "loaded"


def run_folder(f: Hostile, name: str, ws: Path) -> str:
    before = tree(ws)
    try:
        project = import_benchmark("muse-news", name, folder=f.path, root=ws)
    except (DataError, HubError):
        if tree(ws) != before:
            raise Outcome("written", "import_benchmark wrote files on failure") from None
        raise
    try:
        again = load_project(name, ws)
        assert again.forget() == project.forget() and len(again.eval_sets()) == 6
    except Exception as exc:
        raise Outcome("reload", f"project fails to reload: {type(exc).__name__}: {exc}") \
            from None
    return "loaded"


def run_preset(f: Hostile) -> str:
    preset = load_preset(f.path)
    assert isinstance(preset, dict)
    return "loaded"


def run_book(f: Hostile) -> str:
    from sga_core.data.book import read_text_file

    assert read_text_file(f.path).strip()
    return "loaded"


def run_corpus(files: list[Hostile], ws: Path, secret_dir: Path) -> tuple[Counter, list[str]]:
    counts: Counter = Counter()
    report: list[str] = []
    for i, f in enumerate(files):
        counts["tried"] += 1
        try:
            if f.target == "dataset":
                got = run_dataset(f, f"h{i:03d}", ws)
            elif f.target == "normals":
                got = run_normals(f, ws)
            elif f.target == "folder":
                got = run_folder(f, f"h{i:03d}", ws)
            elif f.target == "book":
                got = run_book(f)
            else:
                got = run_preset(f)
        except (DataError, ConfigError, HubError) as exc:
            got = "error"
            try:
                check_error(f, exc, secret_dir)
            except Outcome as bad:
                counts[bad.kind] += 1
                report.append(f"{f.target}/{f.path.name}: {bad}")
                continue
        except Outcome as bad:
            counts[bad.kind] += 1
            report.append(f"{f.target}/{f.path.name}: {bad}")
            continue
        except Exception as exc:  # the one thing the suite exists to forbid
            counts["other exceptions"] += 1
            report.append(f"{f.target}/{f.path.name}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        counts["clear errors" if got == "error" else "loaded"] += 1
        if got != ("error" if f.expect == "error" else "loaded"):
            counts["unexpected"] += 1
            report.append(f"{f.target}/{f.path.name}: {got}, expected {f.expect}")
    return counts, report


def test_hostile_corpus(tmp_path, capsys):
    start = time.perf_counter()
    corpus_dir = tmp_path / "uploads-tmp-secret"
    files = hostile_files(corpus_dir)
    ws = tmp_path / "workspace"
    create_demo_project(root=ws)
    counts, report = run_corpus(files, ws, corpus_dir)
    elapsed = time.perf_counter() - start
    leftovers = [p for p in tree(ws) if ".creating-" in p or p.endswith(".tmp")]
    by_target = Counter(f.target for f in files)
    line = (f"hostile suite: {counts['tried']} files tried ({by_target['dataset']} datasets, "
            f"{by_target['normals']} normal-answer tables, {by_target['preset']} presets, "
            f"{by_target['folder']} benchmark folders, {by_target['book']} books), "
            f"{counts['loaded']} loaded, {counts['clear errors']} clear errors, "
            f"{counts['other exceptions']} other exceptions, {counts['written']} files "
            f"written on failure, {counts['reload']} projects that fail to reload, "
            f"{counts['unclear'] + counts['unexpected']} unexpected outcomes, "
            f"{elapsed:.1f} s")
    with capsys.disabled():
        print("\n" + line)
    assert report == [], "\n".join(report)
    assert counts["tried"] == len(files) >= 200
    assert counts["other exceptions"] == 0
    assert counts["written"] == 0
    assert counts["reload"] == 0
    assert counts["loaded"] + counts["clear errors"] == counts["tried"]
    assert leftovers == []  # the time is printed above; bench/ measures speed, not a test


def test_the_four_wrongly_rejected_u2028_files_load(tmp_path):
    """The hostile testing saw 4 valid files rejected, each holding a raw U+2028: a .jsonl
    and a TOFU-style .json dataset, a CSV, and the app's own normal-answer export."""
    files = [f for f in hostile_files(tmp_path) if "u2028" in f.path.name]
    assert {f.path.name for f in files} >= {"raw-u2028.jsonl", "raw-u2028-tofu.json",
                                            "raw-u2028.csv", "export-u2028.jsonl"}
    project = create_demo_project(root=tmp_path / "ws")
    for f in files:
        assert f.expect == "load"
        if f.target == "normals":
            assert "\u2028" in project.import_normals(f.path).answers[0].text
        else:
            assert any("\u2028" in r["question"] for r in load_dataset(f.path).rows)


def test_representative_subset_covers_every_group(tmp_path):
    files = hostile_files(tmp_path)
    subset = representative(files)
    assert {(f.target, f.group, f.expect) for f in subset} == \
        {(f.target, f.group, f.expect) for f in files}
    assert len(subset) < len(files) // 2
    path, expect = subset[0]  # unpacks as (path, expectation)
    assert path.exists() and expect in ("load", "error")


@pytest.mark.parametrize("target", ["dataset", "normals", "preset", "folder", "book"])
def test_corpus_has_both_outcomes_per_target(tmp_path, target):
    files = [f for f in hostile_files(tmp_path) if f.target == target]
    assert {f.expect for f in files} == {"load", "error"}
