"""Hostile inputs of the data import's newer checks, counted like the rest of the hostile suite:
an escaped NUL in every JSON shape (refused with the same words as a raw NUL byte, naming
file, row and field), a failure while a project is replaced (the old project or the new
one stays, whole), and MUSE's published shapes (long single strings, ``.txt`` raw files).
Never another exception, never a file written on failure."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from sga_core.data import DataError, load_dataset
from sga_core.projects import create_project, list_projects

NUL_FILES = {
    "escaped.jsonl": ('{"question": "q\\u0000", "answer": "a"}\n', 1, "question"),
    "escaped.json": ('[{"question": "q", "answer": "a\\u0000b"}]', 1, "answer"),
    "escaped-list.json": ('["fine text", "bad \\u0000 text"]', 2, "text"),
    "escaped-nested.jsonl": ('{"question": "q", "answer": "a", '
                             '"perturbed_answer": ["x\\u0000"]}\n', 1, "perturbed_answer"),
    "escaped-key.jsonl": ('{"question": "q", "answer": "a", "k\\u0000": 1}\n', 1, None),
    "raw.jsonl": ('{"question": "q\x00", "answer": "a"}\n', None, None),
}


@pytest.mark.parametrize("name", sorted(NUL_FILES))
def test_a_nul_is_refused_escaped_or_raw_with_the_same_words(tmp_path, name):
    text, row, field = NUL_FILES[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_dataset(path)
    message = str(err.value)
    assert "holds a NUL character" in message and name in message
    assert err.value.row == row
    if field is not None:
        assert err.value.field == field
    ws = tmp_path / "ws"
    with pytest.raises(DataError):
        create_project("p", path, root=ws)
    assert list_projects(ws) == [] and not (ws / "p").exists()


@pytest.mark.parametrize("stage", ["move-in", "write"])
def test_a_failure_while_replacing_leaves_a_whole_project(tmp_path, demo_dir, monkeypatch,
                                                          stage):
    ws = tmp_path / "ws"
    create_project("p", demo_dir / "forget.jsonl", root=ws)
    real = os.replace

    def failing(src, dst, *a, **kw):
        name = os.path.basename(src)
        if (stage == "move-in" and name.startswith(".creating-")) or \
                (stage == "write" and name.startswith(".forget.jsonl")):
            raise OSError(5, "I/O error")
        return real(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", failing)
    try:
        create_project("p", demo_dir / "retain.jsonl", root=ws, overwrite=True)
    except OSError:
        pass
    monkeypatch.undo()
    assert (ws / "p" / "project.json").is_file() and (ws / "p" / "forget.jsonl").is_file()
    assert [p.name for p in Path(ws).iterdir() if p.name.startswith(".")] == []


# ------------------------------------------------------------------ MUSE's raw shapes -------
def _muse_case(files: dict[str, str | bytes]) -> dict[str, str | bytes]:
    """A minimal MUSE folder with ``files`` laid over it."""
    from tests.helpers.muse_files import published_files

    base: dict[str, str | bytes] = dict(published_files())
    for name, text in files.items():
        if name.startswith("-"):
            base.pop(name[1:], None)
        else:
            base[name] = text
    return base


LONG = 1_500_000
MUSE_CASES = {  # name -> (files, expected: "load" | the words the error must hold)
    "forget-txt-empty": ({"-raw/forget.json": "", "raw/forget.txt": "  \n\n "}, "empty"),
    "forget-txt-nul": ({"-raw/forget.json": "", "raw/forget.txt": b"a book\x00 of text"},
                       "NUL"),
    "forget-txt-latin1": ({"-raw/forget.json": "", "raw/forget.txt": b"caf\xe9 au lait"},
                          "UTF-8"),
    "forget-txt-and-json": ({"raw/forget.txt": "a book"}, "2 files"),
    "retain-one-long-string": ({"raw/retain2.json": json.dumps(["word " * (LONG // 5)])},
                               "load"),
    "retain-long-no-spaces": ({"raw/retain2.json": json.dumps(["x" * LONG])}, "load"),
    "holdout-long-escaped-nul": ({"privleak/holdout.json": json.dumps(["a" * 5000 + "\0"])},
                                 "NUL"),
    "retain-string-then-number": ({"raw/retain2.json": json.dumps(["text", 3])},
                                  "expected a string"),
    "forget-txt-whole-book": ({"-raw/forget.json": "", "raw/forget.txt":
                               "\n\n".join(f"Para {i}. " + "story " * 80 for i in range(40))},
                              "load"),
}


def test_muse_raw_shapes(tmp_path, tiny_model_dir):
    from sga_core.data.hub import HubError
    from sga_core.data.limits import MAX_STRING_CHARS
    from sga_core.params import ConfigError
    from sga_core.projects import load_project
    from sga_core.projects.benchmarks import import_benchmark

    counts: Counter = Counter()
    wrong = []
    for name, (files, expect) in MUSE_CASES.items():
        folder = tmp_path / name
        folder.mkdir()
        for rel, text in _muse_case(files).items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
        ws = tmp_path / f"ws-{name}"
        try:
            p = import_benchmark("muse-news", folder=folder, root=ws,
                                 tokenizer=str(tiny_model_dir), chunk_tokens=256)
        except (DataError, HubError, ConfigError) as exc:
            message = str(exc)
            counts["clear errors"] += 1
            named = any(d in message for d in ("raw/", "privleak/", "verbmem/", "knowmem/"))
            if expect == "load" or expect not in message or str(folder) in message or \
                    not named:
                wrong.append(f"{name}: {message[:200]}")
            if ws.exists() and list_projects(ws):
                counts["files written on failure"] += 1
                wrong.append(f"{name}: a project was written")
            continue
        except Exception as exc:  # noqa: BLE001 - counted: must be none
            counts["uncaught"] += 1
            wrong.append(f"{name}: {type(exc).__name__}: {exc}"[:200])
            continue
        counts["loaded"] += 1
        if expect != "load":
            wrong.append(f"{name}: loaded, expected {expect!r}")
            continue
        p = load_project(p.name, ws)
        rows = [r["text"] for r in p.retain()] + [r["text"] for r in p.forget()]
        if max(len(t) for t in rows) > MAX_STRING_CHARS or len(rows) < 2:
            wrong.append(f"{name}: rows not cut ({len(rows)})")
    for bad in (0, -1, True, 10**9):
        try:
            import_benchmark("muse-news", folder=tmp_path / "forget-txt-whole-book",
                             root=tmp_path / "ws-chunk", chunk_tokens=bad)
        except ConfigError as exc:
            counts["clear errors"] += 1
            if "chunk tokens" not in str(exc):
                wrong.append(f"chunk_tokens={bad!r}: {exc}")
        else:
            wrong.append(f"chunk_tokens={bad!r}: accepted")
    print(f"\nMUSE raw shapes: {len(MUSE_CASES) + 4} inputs tried, {counts['loaded']} "
          f"loaded, {counts['clear errors']} clear errors, {counts['uncaught']} uncaught "
          f"exceptions, {counts['files written on failure']} files written on failure")
    assert not wrong, wrong
    assert counts["uncaught"] == 0 and counts["files written on failure"] == 0
