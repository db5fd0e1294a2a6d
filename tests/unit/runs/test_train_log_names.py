"""train.log names each logged NLL by the rows it was measured on: the retain reference
learns only retain rows, so its log says retain_nll=<value> (a trial read forget_nll= in a
run that never sees a forget row); the original (forget + retain rows) says train_nll."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("include_forget, measured, absent", [
    (False, "retain_nll", ("forget_nll", "train_nll")),
    (True, "train_nll", ("forget_nll",)),
])
def test_prepare_runs_log_the_nll_they_measure(tmp_path, tiny_model_dir, include_forget,
                                               measured, absent):
    from sga_core.projects import create_demo_project
    from sga_core.projects.training import build_config
    from sga_core.runs.create import create_run
    from sga_core.runs.launch import run_foreground

    project = create_demo_project(root=tmp_path / "workspace")
    cfg = build_config(project, method="finetune",
                       method_args={"include_forget": include_forget},
                       training={"max_steps": 2, "batch_size": 4, "eval_nll": False},
                       launch={}, model=str(tiny_model_dir), run_id="ref",
                       eval_cfg={"enabled": False})
    run_dir = create_run(cfg, tmp_path / "runs")
    st = run_foreground(run_dir, echo=lambda m: None)
    assert st["state"] == "completed", st
    steps = [line for line in (run_dir / "train.log").read_text().splitlines()
             if re.search(r"step \d+/\d+ loss=", line)]
    assert steps
    for line in steps:
        assert re.search(rf"\b{measured}=\d+\.\d+", line), line
        assert not any(f"{name}=" in line for name in absent), line
        assert line.count(f"{measured}=") == 1, line
