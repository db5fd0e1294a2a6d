"""Followed call by call, a launch's config passes from the queue to the run folder
(``runs.queue.submit`` -> config.yaml, command.sh, status.json) through each module at most
twice, instead of going back and forth between the run folder and the config module (the
data paths were resolved there file by file, and a given run id checked twice).

What is counted: a *visit* is a call from one module into another that hands over the
config (the TrainConfig itself, ``self`` included, one of its sections, its run id, or its
``method_args``, ``field_map`` or ``eval.sets``). Calls within a module are one visit."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from sga_core.config import TrainConfig
from sga_core.data import load_qa
from sga_core.normals.idk import idk_normals
from sga_core.runs.queue import submit

LIB = Path(__file__).resolve().parents[3] / "sga_core"


def _module(frame) -> str | None:
    """``runs/folder`` for a frame of sga_core/runs/folder.py; None outside the library."""
    path = Path(frame.f_code.co_filename)
    return str(path.relative_to(LIB).with_suffix("")) if path.is_relative_to(LIB) else None


def config_visits(run, cfg: TrainConfig) -> list[tuple[str | None, str, str]]:
    """(caller module, callee module, function) of every call ``run()`` makes from one
    module into another that hands over ``cfg`` or a part of it, in call order."""
    visits = []

    def parts() -> set[int]:
        return {id(p) for p in (cfg, cfg.data, cfg.training, cfg.launch, cfg.eval,
                                cfg.method_args, cfg.data.field_map, cfg.eval.sets,
                                cfg.run_id or cfg)}

    def profile(frame, event, arg):
        if event != "call":
            return
        callee = _module(frame)
        if callee is None:
            return
        code = frame.f_code
        args = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if not any(id(frame.f_locals.get(a)) in parts() for a in args):
            return
        caller = _module(frame.f_back) if frame.f_back is not None else None
        if caller != callee:
            visits.append((caller, callee, code.co_name))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return visits


def launch_config(tmp_path: Path, demo_dir: Path) -> TrainConfig:
    """An SGA launch as the Train page makes it: its run id (the page's preview names it),
    forget, retain and normals files, probes, an evaluation set."""
    normals = tmp_path / "normals.jsonl"
    idk_normals(len(load_qa(demo_dir / "forget.jsonl")), 4).save(normals)
    return TrainConfig.from_dict({
        "run_id": "sga-launch-path", "method": "sga", "method_args": {"r": -0.8, "k": 4},
        "data": {"forget": str(demo_dir / "forget.jsonl"),
                 "retain": str(demo_dir / "retain.jsonl"), "normals": str(normals)},
        "training": {"max_steps": 1, "probe_rows": [0]},
        "eval": {"sets": {"real_authors": str(demo_dir / "real_authors.jsonl")}}})


def test_a_launch_config_visits_each_module_at_most_twice(tmp_path, demo_dir):
    cfg = launch_config(tmp_path, demo_dir)
    visits = config_visits(lambda: submit(cfg, tmp_path / "runs", start_runner=False), cfg)
    per_module = Counter(callee for _, callee, _ in visits)
    chain = " -> ".join(f"{callee}.{fn}" for _, callee, fn in visits)
    # it traced: the launch reached the module that makes run folders (runs/create, since
    # runs/folder keeps the names and readers) and the config module
    assert per_module["runs/create"] >= 1 and per_module["config"] >= 1, chain
    assert {m: n for m, n in per_module.items() if n > 2} == {}, chain
    run_dir = tmp_path / "runs" / "sga-launch-path"
    assert {"config.yaml", "command.sh"} <= {p.name for p in run_dir.iterdir()}


def test_the_visit_counter_counts_a_module_entered_three_times(tmp_path, demo_dir):
    """The counter sees the back-and-forth the run folder once had: resolving each data
    path in the config module, file by file."""
    cfg = launch_config(tmp_path, demo_dir)
    cfg.base_dir = str(demo_dir)

    def back_and_forth():
        for name in ("forget", "retain", "normals"):
            cfg.resolve(getattr(cfg.data, name))

    per_module = Counter(callee for _, callee, _ in config_visits(back_and_forth, cfg))
    assert per_module["config"] == 3


def test_a_validated_config_names_its_data_files_resolved(tmp_path, demo_dir):
    """Why the run folder no longer comes back to the config module for each file: a
    validated config's data paths are already resolved against its file's folder, exactly
    as :meth:`TrainConfig.resolve` finds them; paths of a config without a file stay as
    given (relative to the working directory)."""
    folder = tmp_path / "cfg"
    folder.mkdir()
    (folder / "f.jsonl").write_text((demo_dir / "forget.jsonl").read_text())
    cfg = TrainConfig.from_dict({"method": "ga", "data": {"forget": "f.jsonl"}},
                                base_dir=folder)
    assert cfg.data.forget == str(folder / "f.jsonl")
    assert cfg.resolve(cfg.data.forget) == folder / "f.jsonl"  # resolving again: the same
    plain = TrainConfig.from_dict({"method": "ga", "data": {"forget": "f.jsonl"}})
    assert plain.data.forget == "f.jsonl" and plain.data.retain is None
