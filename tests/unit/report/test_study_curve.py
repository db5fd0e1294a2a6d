"""A study's curve (sga_core/report/study.py): each request's value of the chosen metrics
from its run's evaluation, in request order, the Original and Retained as references, a run
not evaluated yet (or damaged) a point without values that says why."""

from __future__ import annotations

from pathlib import Path

from sga_core.fileio import atomic_write_json
from sga_core.projects.study import Study
from sga_core.report.study import DEFAULT_METRICS, curve_series, study_curve
from sga_core.runs import status as run_status


def evaluated(root: Path, run_id: str, values: dict | None) -> None:
    run_dir = root / run_id
    run_dir.mkdir(parents=True)
    run_status.write_run(run_dir, "completed")
    if values is not None:
        atomic_write_json(run_dir / "eval" / "summary.json", {
            "task": "text", "elapsed_s": 1.0,
            "metrics": {k: {"name": k, "value": v, "reason": None} for k, v in values.items()}})


def muse(kf: float, vf: float, kr: float) -> dict:
    return {"forget_knowmem": kf, "forget_verbmem": vf, "retain_knowmem": kr,
            "forget_mia_auc": 0.5}


def study(**kw) -> Study:
    return Study(**{"name": "s", "mode": "sustain", "method": "ga",
                    "parts": ["sust/forget_1", "sust/forget_2", "sust/forget_3"],
                    "runs": ["s-r1", "s-r2", "s-r3"], "start_model": "/m",
                    "original_run": "p-original", "reference_run": "p-retain-ref", **kw})


def test_points_in_request_order_with_the_references(tmp_path):
    evaluated(tmp_path, "s-r1", muse(0.5, 0.4, 0.6))
    evaluated(tmp_path, "s-r2", muse(0.3, 0.2, 0.5))
    evaluated(tmp_path, "s-r3", None)  # completed, evaluation pending
    evaluated(tmp_path, "p-original", muse(0.7, 0.9, 0.65))
    evaluated(tmp_path, "p-retain-ref", muse(0.3, 0.2, 0.62))
    curve = study_curve(study(), tmp_path)
    assert curve["metrics"] == list(DEFAULT_METRICS)
    assert [(p["request"], p["part"], p["run"]) for p in curve["points"]] == [
        (1, "sust/forget_1", "s-r1"), (2, "sust/forget_2", "s-r2"), (3, "sust/forget_3", "s-r3")]
    assert curve["points"][2]["values"] == {}
    assert curve["points"][2]["why"] == "not evaluated yet"
    assert curve["points"][2]["state"] == "completed"
    series = {s["metric"]: s for s in curve_series(curve)}
    assert series["forget_verbmem"] == {"metric": "forget_verbmem", "x": [1, 2],
                                        "y": [0.4, 0.2], "Original": 0.9, "Retained": 0.2}
    assert series["retain_knowmem"]["y"] == [0.6, 0.5]
    assert series["retain_knowmem"]["Retained"] == 0.62
    assert "forget_mia_auc" in curve["available"]


def test_the_user_chooses_the_metric(tmp_path):
    evaluated(tmp_path, "s-r1", muse(0.5, 0.4, 0.6))
    curve = study_curve(study(runs=["s-r1"], parts=["sust/forget_1"]), tmp_path,
                        ["forget_mia_auc"])
    (series,) = curve_series(curve)
    assert (series["metric"], series["x"], series["y"]) == ("forget_mia_auc", [1], [0.5])
    assert series["Original"] is None  # the Original was not evaluated


def test_missing_and_damaged_runs_still_show_the_rest(tmp_path):
    evaluated(tmp_path, "s-r1", muse(0.5, 0.4, 0.6))
    evaluated(tmp_path, "s-r2", None)
    (tmp_path / "s-r2" / "eval").mkdir()
    (tmp_path / "s-r2" / "eval" / "summary.json").write_text("{not json")
    curve = study_curve(study(), tmp_path)
    assert curve["points"][0]["values"]["forget_knowmem"] == 0.5
    assert curve["points"][1]["why"].startswith("damaged")
    assert curve["points"][2]["state"] == "missing"
    assert curve["references"] == {}
    assert curve["x_label"].startswith("request")
