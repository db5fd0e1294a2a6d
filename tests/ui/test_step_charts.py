"""Charts against the training step (losses, evaluation during training, a token across
steps, the Results curves): a run of one logged step still shows its point, and a few steps
get whole-number ticks, never 0.5 steps (a new user's study saw an empty loss chart and
ticks at 0.5)."""

from __future__ import annotations

import json

import plotly.graph_objects as go

from tests.helpers.own_data import fake_run, own_project, tofu_files
from tests.helpers.ui import open_page
from ui.charts import step_chart


def test_one_point_is_marked_and_few_steps_get_whole_ticks():
    fig = step_chart(go.Figure(go.Scatter(x=[1], y=[2.5], mode="lines")))
    assert fig.data[0].mode == "lines+markers"
    assert fig.layout.xaxis.dtick == 1 and fig.layout.xaxis.tickformat == "d"
    assert fig.layout.xaxis.title.text == "step"
    many = step_chart(go.Figure(go.Scatter(x=list(range(0, 500, 5)), y=[1.0] * 100,
                                           mode="lines")))
    assert many.data[0].mode == "lines" and many.layout.xaxis.dtick is None


def test_the_runs_page_draws_a_one_step_loss_as_a_point(ui_env):
    from sga_core.fileio import atomic_write_jsonl

    # a run of 2 steps that logged its last one only (logging_steps 2)
    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    run = fake_run(ui_env / "runs", project, "sga-one")
    atomic_write_jsonl(run / "metrics.jsonl", [{"step": 2, "loss": 2.5, "forget_nll": 1.2}])
    at = open_page("app_pages/runs.py")
    at.selectbox(key="runs.select").set_value("sga-one").run()
    assert not at.exception, at.exception
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if "losses" in c.proto.spec)
    assert {d["mode"] for d in spec["data"]} == {"lines+markers"}
    assert spec["layout"]["xaxis"]["dtick"] == 1
