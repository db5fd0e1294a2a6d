"""Sweeps over a method's own sweep setting (Task Vector and WHP: alpha; SGA: r): each run
is recorded and named with the setting and its value, Results groups the sweep by it, and
the Train page's sweep box offers values within that setting's own bounds."""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from pathlib import Path

import pytest

from sga_core import workbench as wb
from sga_core.params import ConfigError
from sga_core.runs.queue import RUNNER_LOCK
from tests.helpers.own_data import metrics, write_summary
from tests.helpers.ui import open_page


@contextmanager
def runner_held(root: Path):
    """Hold the runner lock, as a live runner does: queued runs stay queued."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / RUNNER_LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


SWEPT = [m for m in wb.method_names(unlearning_only=True) if wb.get_method(m).sweep_param]


@pytest.mark.parametrize("method", SWEPT)
def test_sweep_values_respect_the_settings_own_bounds(method):
    from sga_core.params import field_specs

    cls = wb.get_method(method)
    spec = next(s for s in field_specs(cls.Config) if s["name"] == cls.sweep_param)
    default = wb.sweep_default(method)
    values = wb.parse_sweep_values(default, method)
    assert len(values) >= 2
    assert all(spec["min"] <= v <= spec["max"] for v in values), (method, values)
    if spec["min"] is not None:
        below = spec["min"] - 1
        with pytest.raises(ConfigError, match=f"{cls.sweep_param} must be >= "):
            wb.parse_sweep_values(f"{below:g}, {values[0]:g}", method)
    with pytest.raises(ConfigError, match=f"{cls.sweep_param} must be <= "):
        wb.parse_sweep_values(f"{spec['max'] + 1:g}", method)
    with pytest.raises(ConfigError, match=f"enter {cls.sweep_param} values"):
        wb.parse_sweep_values("", method)


def test_task_vector_sweep_is_recorded_named_and_grouped_by_alpha(tmp_path):
    from sga_core.projects import create_demo_project

    project = create_demo_project(root=tmp_path / "ws")
    root = tmp_path / "runs"

    def make_cfg(group, value):
        return wb.build_config(project, method="task-vector", method_args={"alpha": value},
                               training={"max_steps": 1}, launch={}, model="embedded:smollm2",
                               sweep=group, eval_cfg=wb.default_eval(project, root, False))

    with runner_held(root):
        group, dirs = wb.queue_sweep(make_cfg, [0.5, 1.0, 2.0], "alphas", root)
    assert len(dirs) == 3
    runs = {r["run_id"]: r for r in wb.list_runs(root)}
    names = wb.display_names(list(runs.values()), project)
    assert sorted(names.values()) == ["task-vector alpha=0.5", "task-vector alpha=1",
                                      "task-vector alpha=2"]
    assert sorted((runs[d.name]["sweep_param"], runs[d.name]["sweep_value"]) for d in dirs) \
        == [("alpha", 0.5), ("alpha", 1.0), ("alpha", 2.0)]
    for d, fq in zip(dirs, (0.2, 0.5, 0.3)):
        write_summary(d, metrics(fq=fq))
    rows = wb.results_table(project, root)
    assert group in wb.r_groups(rows)
    assert {(r["sweep_param"], r["sweep_value"]) for r in rows} == {
        ("alpha", 0.5), ("alpha", 1.0), ("alpha", 2.0)}
    assert group in wb.r_groups(rows)
    assert wb.sweep_param_of(rows, group) == "alpha"
    series = wb.sweep_series(rows, group)
    assert series["r"] == [0.5, 1.0, 2.0] and series["FQ"] == [0.2, 0.5, 0.3]
    bands = wb.r_bands(rows, group)
    assert bands["r"] == [0.5, 1.0, 2.0]
    suggestion = wb.suggest_r(rows, group, "FQ")
    assert suggestion["r"] == 1.0
    assert "alpha = 1" in wb.suggestion_text(suggestion)


def test_sga_sweep_keeps_r(tmp_path):
    """SGA's sweep is still over r and still named by it."""
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project

    project = create_demo_project(root=tmp_path / "ws")
    normals = tmp_path / "normals.jsonl"
    idk_normals(len(project.forget()), 4).save(normals)
    root = tmp_path / "runs"

    def make_cfg(group, value):
        return wb.build_config(project, method="sga", method_args={"r": value, "k": 4},
                               training={"max_steps": 1}, launch={}, model="embedded:smollm2",
                               sweep=group, normals=str(normals),
                               eval_cfg=wb.default_eval(project, root, False))

    with runner_held(root):
        group, dirs = wb.queue_sweep(make_cfg, wb.parse_sweep_values("-0.8, 0", "sga"),
                                     "rs", root)
    for d, fq in zip(dirs, (0.2, 0.5)):
        write_summary(d, metrics(fq=fq))
    rows = wb.results_table(project, root)
    assert sorted(r["run"] for r in rows) == ["sga r=-0.8", "sga r=0"]
    assert wb.sweep_param_of(rows, group) == "r"
    assert wb.sweep_series(rows, group)["r"] == [-0.8, 0.0]


@pytest.mark.slow
def test_train_page_sweep_box_offers_the_methods_own_values(ui_env, tiny_model_dir):
    at = open_page("app_pages/train.py")
    at.radio(key="train.model_mode").set_value("other model").run()
    at.text_input(key="train.model").set_value(str(tiny_model_dir)).run()
    at.selectbox(key="train.method").set_value("task-vector").run()
    assert not at.exception, at.exception
    box = at.text_input(key="train.sweep_values.task-vector")
    assert "alpha" in box.label
    offered = wb.parse_sweep_values(box.value, "task-vector")
    assert offered and all(0 <= v <= 100 for v in offered), box.value
    with runner_held(ui_env / "runs"):
        at.button(key="train.sweep").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    runs = [r for r in wb.list_runs(ui_env / "runs") if r["method"] == "task-vector"]
    assert sorted(r["sweep_value"] for r in runs) == sorted(offered)
    assert {r["sweep_param"] for r in runs} == {"alpha"}
    # back to SGA: its box still offers r values (its own default)
    at.selectbox(key="train.method").set_value("sga").run()
    assert wb.parse_sweep_values(at.text_input(key="train.sweep_values").value, "sga")


def test_cli_sweep_values_are_the_methods_own(tmp_path, demo_dir, capsys):
    """``train --sweep-values`` sweeps the method's own setting within its bounds: alpha
    takes 2 (above r's bound of 1) and refuses -1 (below alpha's 0)."""
    from sga_core.cli import main

    root = tmp_path / "runs"
    common = ["train", "--method", "task-vector", "--forget", str(demo_dir / "forget.jsonl"),
              "--model", "embedded:smollm2", "--max-steps", "1", "--runs-dir", str(root),
              "--no-launch"]
    assert main(common + ["--sweep-values", "0.5, 2"]) == 0
    runs = wb.list_runs(root)
    assert sorted(r["sweep_value"] for r in runs) == [0.5, 2.0]
    assert {r["sweep_param"] for r in runs} == {"alpha"}
    capsys.readouterr()
    assert main(common + ["--sweep-values", "-1, 1"]) == 2
    assert "alpha must be >= 0" in capsys.readouterr().err
