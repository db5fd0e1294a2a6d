"""Every temporary name the code makes is one that clean-up knows (a grep of the code, so a
new one cannot be missed), a half-saved model folder and a killed ``train``'s temporary
folder are cleaned, and a folder being replaced is never missing for a reader."""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from sga_core.fileio import atomic_dir
from sga_core.runs import status as run_status
from sga_core.runs.leftovers import (
    IN_PLACE,
    KEPT,
    TEMP_KINDS,
    clean_leftovers,
    clean_temp_leftovers,
    leftover_kind,
)
from tests.helpers.wait import wait_for

ROOT = Path(__file__).resolve().parents[2]
HOUR = 3600.0
TEMPFILE_FUNCS = {"mkdtemp", "mkstemp", "TemporaryDirectory", "NamedTemporaryFile",
                  "SpooledTemporaryFile", "TemporaryFile"}
KIND_CALL = re.compile(r"\b(temp_dir|make_temp_dir|temp_prefix)\(\s*([^)]*)\)")
# a name made beside what is written: ".{x}.tmp", f".creating-{name}-{os.getpid()}", ...
IN_PLACE_LITERAL = re.compile(r"""f?["'](\.(?:creating-|convert-|\{)[^"'\s/]*)["']""")


def app_sources() -> list[Path]:
    files = [ROOT / "app.py"]
    for folder in ("sga_core", "ui", "app_pages"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


def sample(template: str) -> str:
    """A name a template makes: each ``{...}`` filled in (a pid with digits)."""
    return re.sub(r"\{([^}]*)\}", lambda m: "4242" if "pid" in m.group(1) else "x", template)


def template(node) -> str | None:
    """A string literal or f-string as a template (``{...}`` where a value goes)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else
                       "{" + ast.unparse(v.value) + "}" for v in node.values)
    return None


def tempfile_calls(text: str):
    """(call, prefix template, suffix template) of each tempfile call in a module, parsed
    (a call's arguments may hold calls and span lines)."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            if name in TEMPFILE_FUNCS:
                kw = {k.arg: template(k.value) for k in node.keywords}
                yield ast.unparse(node), kw.get("prefix"), kw.get("suffix")


def test_every_temporary_name_the_code_makes_is_known_to_clean_up():
    unknown, seen_kinds, in_place = [], set(), set()
    for path in app_sources():
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        for call, prefix, suffix in tempfile_calls(text):
            if path.name == "leftovers.py":
                continue  # where the names are made from TEMP_KINDS
            name = None if prefix is None else sample(prefix) + "q1w2_e3" + sample(suffix or "")
            if name is None or leftover_kind(name) is None:
                unknown.append(f"{where}: {call}")
        for m in KIND_CALL.finditer(text):
            if path.name == "leftovers.py":
                continue
            kind = m.group(2).strip().strip("'\"")
            seen_kinds.add(kind)
            if kind not in TEMP_KINDS:
                unknown.append(f"{where}: {m.group(0)} (kind not in TEMP_KINDS)")
        for m in IN_PLACE_LITERAL.finditer(text):
            name = sample(m.group(1))
            if name.endswith((".", "-")):
                continue  # a prefix (".{path.name}.", ".convert-"): its call is checked above
            if KEPT.fullmatch(name):
                continue  # a lock file: kept on purpose, it holds no data
            in_place.add(name)
            if leftover_kind(name) is None:
                unknown.append(f"{where}: {m.group(0)}")
    assert not unknown, "temporary names clean_leftovers does not know:\n" + "\n".join(unknown)
    # the grep does find the names the code makes today
    assert {"normals", "book", "hub", "upload"} <= seen_kinds
    assert {leftover_kind(n) for n in in_place} >= {"creating", "tmp", "old"}
    assert set(IN_PLACE) == {"creating", "tmp", "old", "convert", "deleting"}


def age(path: Path, seconds: float) -> Path:
    t = time.time() - seconds
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            os.utime(os.path.join(folder, name), (t, t), follow_symlinks=False)
    os.utime(path, (t, t), follow_symlinks=False)
    return path


def model_folder(path: Path, mark: str) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "model.safetensors").write_text(mark)
    return path


def test_a_half_saved_model_folder_and_a_moved_aside_one_are_cleaned(tmp_path):
    runs = tmp_path / "runs"
    half = age(model_folder(runs / "killed-mid-save" / ".model.tmp", "half"), 2 * HOUR)
    young = model_folder(runs / "saving-now" / ".model.tmp", "being written")
    # a crash between moving the old model aside and putting the new one in place
    lost = model_folder(runs / "crashed-between" / ".model.old", "old model")
    # a crash after the new model was in place, before the old one was removed
    done = model_folder(runs / "crashed-after" / "model", "new model")
    stale_old = age(model_folder(runs / "crashed-after" / ".model.old", "old model"), 2 * HOUR)
    removed = clean_leftovers(runs)
    assert removed == [half] and not half.exists()
    assert young.exists() and lost.exists()  # moved aside a moment ago: may be mid-swap
    later = time.time() + 2 * HOUR  # ctime (when a folder was moved) cannot be set back
    removed = clean_leftovers(runs, now=later)
    assert runs / "crashed-between" / "model" in removed
    assert (runs / "crashed-between" / "model" / "model.safetensors").read_text() == "old model"
    assert not lost.exists()
    assert stale_old in removed and not stale_old.exists()
    assert (done / "model.safetensors").read_text() == "new model"


def test_a_reader_always_finds_the_folder_being_replaced(tmp_path):
    target = tmp_path / "model"
    with atomic_dir(target) as tmp:
        (tmp / "config.json").write_text("0")
    missing, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            if not (target / "config.json").exists():
                missing.append(time.time())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(1, 150):
            with atomic_dir(target) as tmp:
                for n in range(40):
                    (tmp / f"shard-{n}.bin").write_bytes(b"x" * 64)
                (tmp / "config.json").write_text(str(i))
    finally:
        stop.set()
        reader.join(60)
    assert missing == [], f"the folder was missing {len(missing)} times"
    assert (target / "config.json").read_text() == "149"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no .tmp, no .old


def test_a_killed_train_leaves_no_temporary_folder_for_long(tiny_model_dir, demo_dir,
                                                            tmp_path):
    systmp, runs = tmp_path / "systmp", tmp_path / "runs"
    systmp.mkdir()
    env = {**os.environ, "TMPDIR": str(systmp)}
    train = subprocess.Popen(
        [sys.executable, "-m", "sga_core", "train", "--model", str(tiny_model_dir),
         "--forget", str(demo_dir / "forget.jsonl"), "--max-steps", "2000", "--no-eval",
         "--runs-dir", str(runs)], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def running():
            return [d for d in runs.glob("*/status.json")
                    if run_status.read(d).get("state") == "running"] if runs.exists() else []

        wait_for(running, 180, "the run to start", interval=0.2, proc=train)
        left = [p.name for p in systmp.iterdir()]
        assert len(left) == 1 and left[0].startswith(f"sga-normals-{train.pid}-"), left
    finally:
        train.send_signal(signal.SIGKILL)
        train.wait(60)
    run_dir = running()[0].parent if running() else next(runs.iterdir())
    # its trainer stops (its caller is gone); then nothing of the run runs
    wait_for(lambda: run_status.effective_run(run_dir).get("state") != "running", 120,
             "the run to stop running", interval=0.2)
    assert run_status.effective_run(run_dir)["state"] in ("cancelled", "failed")
    mine = systmp / f"sga-normals-{os.getpid()}-x"  # a live process's folder stays
    mine.mkdir()
    removed = clean_temp_leftovers(systmp)
    assert [p.name for p in removed] == left
    assert [p.name for p in systmp.iterdir()] == [mine.name]
