"""Launches at the same moment each get a run of their own: eight threads, or eight
processes, released together by a barrier, through the Train page's library path
(workbench.submit_seeds) and the CLI's (``train --queue`` / ``--no-launch``), all succeed with
distinct run ids and complete run folders (the README: two tabs that press Launch at once
get two queued runs)."""

from __future__ import annotations

import fcntl
import multiprocessing
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from sga_core.runs.queue import RUNNER_LOCK

N = 8


@contextmanager
def runner_held(root: Path):
    """Hold the runs folder's runner lock, as a live runner does: submitted runs stay
    queued (nothing trains), which is what this test looks at."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / RUNNER_LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def check_folders(root: Path, dirs: list[Path], expected: int, state: str) -> None:
    names = [d.name for d in dirs]
    assert len(names) == expected and len(set(names)) == expected, sorted(names)
    listed = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
    assert listed == sorted(names)  # nothing else, nothing half-made
    assert not [p for p in root.iterdir() if p.name.startswith(".creating-")]
    for d in dirs:
        cfg = yaml.safe_load((d / "config.yaml").read_text())
        assert cfg["run_id"] == d.name
        assert str(d) in (d / "command.sh").read_text()
        status = yaml.safe_load((d / "status.json").read_text())
        assert status["state"] == state and status["run_id"] == d.name
        assert (d / "data" / "manifest.json").exists() and (d / "data" / "forget.jsonl").exists()


def train_page_launch(project, root: Path, seeds: str):
    """What the Train page's Launch does (app_pages/train.py): build the config, submit it
    once per seed."""
    from sga_core import workbench as wb

    cfg = wb.build_config(project, method="ga", method_args={},
                          training={"max_steps": 1, "seeds": seeds}, launch={},
                          model="embedded:smollm2", run_id="",
                          eval_cfg=wb.default_eval(project, root, False))
    return wb.submit_seeds(cfg, root)


@pytest.mark.parametrize("seeds", ["", "2"])
def test_simultaneous_train_page_launches_in_threads(tmp_path, seeds):
    from sga_core.projects import create_demo_project

    project = create_demo_project(root=tmp_path / "ws")
    root = tmp_path / "runs"
    barrier = threading.Barrier(N)
    results: list = [None] * N

    def launch(i: int) -> None:
        barrier.wait()
        try:
            results[i] = train_page_launch(project, root, seeds)
        except BaseException as exc:  # noqa: BLE001 - reported below
            results[i] = exc

    with runner_held(root):
        threads = [threading.Thread(target=launch, args=(i,)) for i in range(N)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    errors = [r for r in results if not isinstance(r, list)]
    assert errors == [], errors
    dirs = [d for r in results for d in r]
    per_launch = 2 if seeds else 1
    check_folders(root, dirs, N * per_launch, "queued")
    if seeds:  # each launch is one seed group of its own
        groups = [{yaml.safe_load((d / "config.yaml").read_text())["group"] for d in r}
                  for r in results]
        assert all(len(g) == 1 for g in groups)
        assert len(set.union(*groups)) == N
    print(f"{N} simultaneous Train-page launches (seeds {seeds or 1}): {len(dirs)} run "
          "folders, all distinct")


def _cli_launch(barrier, out, forget: str, root: str, flag: str, seeds: str) -> None:
    import contextlib
    import io

    from sga_core.cli import main

    argv = ["train", "--method", "ga", "--forget", forget, "--model", "embedded:smollm2",
            "--max-steps", "1", "--runs-dir", root, flag]
    if seeds:
        argv += ["--seeds", seeds]
    barrier.wait()
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            code = main(argv)
    except BaseException as exc:  # noqa: BLE001 - a crash is what is looked for
        code = f"{type(exc).__name__}: {exc}"
    out.put((code, buf.getvalue()))


@pytest.mark.parametrize("flag,seeds", [("--queue", ""), ("--no-launch", ""),
                                        ("--queue", "2")])
def test_simultaneous_cli_launches_in_processes(tmp_path, demo_dir, flag, seeds):
    root = tmp_path / "runs"
    ctx = multiprocessing.get_context("fork")
    barrier, out = ctx.Barrier(N), ctx.Queue()
    with runner_held(root):
        procs = [ctx.Process(target=_cli_launch, args=(barrier, out, str(demo_dir /
                                                                         "forget.jsonl"),
                                                       str(root), flag, seeds))
                 for _ in range(N)]
        for p in procs:
            p.start()
        results = [out.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(timeout=60)
    assert [code for code, _ in results] == [0] * N, results
    dirs = [Path(line.split(":", 1)[1].strip()) for _, text in results
            for line in text.splitlines() if line.startswith("run folder:")]
    check_folders(root, dirs, N * (2 if seeds else 1),
                  "queued")
    print(f"{N} simultaneous CLI launches (train {flag}, seeds {seeds or 1}): {len(dirs)} "
          "run folders, all distinct")


def _page_launch(barrier, out, project, root: Path) -> None:
    barrier.wait()
    try:
        out.put([str(d) for d in train_page_launch(project, root, "")])
    except BaseException as exc:  # noqa: BLE001 - reported by the test
        out.put(f"{type(exc).__name__}: {exc}")


def test_simultaneous_train_page_launches_in_processes(tmp_path):
    """Two browser sessions are threads of one server, but two servers (or the app and a
    script) share a runs folder too: the Train page's library path from 8 processes."""
    from sga_core.projects import create_demo_project

    project = create_demo_project(root=tmp_path / "ws")
    root = tmp_path / "runs"
    ctx = multiprocessing.get_context("fork")
    barrier, out = ctx.Barrier(N), ctx.Queue()
    with runner_held(root):
        procs = [ctx.Process(target=_page_launch, args=(barrier, out, project, root))
                 for _ in range(N)]
        for p in procs:
            p.start()
        results = [out.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(timeout=60)
    assert all(isinstance(r, list) for r in results), results
    check_folders(root, [Path(d) for r in results for d in r], N, "queued")
