"""The Results page's Studies section (ui/study.py) through AppTest: a MUSE-News project with
its scal / sust splits offers the launch form; a launched study's runs are queued as a chain
(request 2 on request 1's model); a study is drawn as a curve of the chosen metrics against
the request number, with the Original and Retained dashed, and a table of its points."""

from __future__ import annotations

import json
import shutil

import pytest

from sga_core.fileio import atomic_write_json
from sga_core.projects.benchmarks import import_benchmark
from sga_core.projects.study import Study, list_studies, save_study
from sga_core.runs import status as run_status
from tests.helpers.hostile_corpus import write_folder
from tests.helpers.muse_files import published_files, study_files
from tests.helpers.ui import open_page, shown


def evaluated(root, run_id: str, values: dict) -> None:
    run_dir = root / run_id
    run_dir.mkdir(parents=True)
    run_status.write_run(run_dir, "completed")
    atomic_write_json(run_dir / "eval" / "summary.json", {
        "task": "text", "elapsed_s": 1.0,
        "metrics": {k: {"name": k, "value": v, "reason": None} for k, v in values.items()}})


@pytest.fixture()
def news(ui_env):
    files = {**published_files(), **study_files()}
    return import_benchmark("muse-news", folder=write_folder(ui_env / "news", files),
                            root=ui_env / "workspace", study_splits=True)


def curve_spec(at) -> dict:
    (chart,) = [c for c in at.get("plotly_chart") if "results.study.plot" in c.proto.id]
    return json.loads(chart.proto.spec)


def test_a_study_is_drawn_as_a_curve_with_its_references(ui_env, news):
    runs = ui_env / "runs"
    evaluated(runs, "s-r1", {"forget_knowmem": 0.5, "forget_verbmem": 0.4,
                             "retain_knowmem": 0.6, "forget_mia_auc": 0.7})
    evaluated(runs, "s-r2", {"forget_knowmem": 0.3, "forget_verbmem": 0.2,
                             "retain_knowmem": 0.5, "forget_mia_auc": 0.6})
    evaluated(runs, "muse-news-original", {"forget_knowmem": 0.8, "forget_verbmem": 0.9,
                                           "retain_knowmem": 0.65})
    evaluated(runs, "muse-news-retain-ref", {"forget_knowmem": 0.2, "forget_verbmem": 0.1,
                                             "retain_knowmem": 0.62})
    save_study(news, Study("s", "sustain", "ga", ["sust/forget_1", "sust/forget_2"],
                           ["s-r1", "s-r2"], "/m", "muse-news-original",
                           "muse-news-retain-ref"))
    at = open_page("app_pages/results.py", "muse-news")
    traces = {t["name"]: t for t in curve_spec(at)["data"]}
    assert traces["forget_verbmem"]["x"] == [1, 2]
    assert traces["forget_verbmem"]["y"] == [0.4, 0.2]
    assert traces["forget_knowmem: Original"]["y"] == [0.8, 0.8]
    assert traces["retain_knowmem: Retained"]["y"] == [0.62, 0.62]
    assert "forget_mia_auc" not in traces  # not chosen by default
    table = at.dataframe[-1].value
    assert list(table["run"]) == ["s-r1", "s-r2"]
    assert list(table["forget_knowmem"]) == [0.5, 0.3]
    # the user picks another metric: the curve follows
    at.multiselect(key="results.study.metrics.s").set_value(["forget_mia_auc"]).run()
    traces = {t["name"]: t for t in curve_spec(at)["data"]}
    assert set(traces) == {"forget_mia_auc"} and traces["forget_mia_auc"]["y"] == [0.7, 0.6]


def test_the_form_launches_a_chained_study(ui_env, news, tiny_model_dir, monkeypatch):
    from sga_core.runs import queue

    monkeypatch.setattr(queue, "ensure_runner", lambda *a, **k: None)  # no runner process
    at = open_page("app_pages/results.py", "muse-news")
    at.number_input(key="results.study.requests").set_value(2)
    at.number_input(key="results.study.steps").set_value(2)
    at.text_input(key="results.study.name").set_value("web")
    at.button(key="FormSubmitter:results.study.form-Launch study").click().run()
    assert any("has no Original to start the study from" in shown(e.value) for e in at.error)
    # with the project's Original prepared, it launches
    shutil.copytree(tiny_model_dir, ui_env / "runs" / "muse-news-original" / "model")
    at.button(key="FormSubmitter:results.study.form-Launch study").click().run()
    assert not at.exception, at.exception
    assert any("Study web: 2 runs queued (web-r1, web-r2)" in shown(s.value)
               for s in at.success)
    (study,) = list_studies(news)
    assert study.runs == ["web-r1", "web-r2"] and study.mode == "sustain"
    from sga_core.runs.folder import RunFolder

    r2 = RunFolder(ui_env / "runs" / "web-r2").config()
    assert r2.model == str(ui_env / "runs" / "web-r1" / "model")
    assert r2.training.max_steps == 2


def test_the_data_page_names_the_forget_parts(ui_env, news):
    at = open_page("app_pages/data.py", "muse-news")
    notes = [shown(c.value) for c in at.caption if "forget parts" in shown(c.value)]
    assert notes == ["forget parts, the requests of MUSE's studies (Results → Studies): "
                     + ", ".join(f"{c}/forget_{k} ({6 * k if c == 'scal' else 6} rows)"
                                 for c in ("scal", "sust") for k in range(1, 5))]
