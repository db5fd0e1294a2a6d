"""AppTest flows for seeds and uncertainty (docs/spec.md#57-seeds-and-groups) on the pages:
launching over seeds from the Train page, the Results page pooled per configuration with intervals,
error bars on metric-versus-r, the r suggestion, MU's components, one run's uncertainty and a
two-run comparison, the r* page's sweep results, and evaluation during training on the Runs page.

The evaluated runs are made by hand (run folders with an eval/summary.json and
per_sample.jsonl), so the pages are tested on known numbers without training."""

from __future__ import annotations

import json
import random

import pytest

from sga_core.fileio import atomic_write_json, atomic_write_jsonl
from sga_core.metrics.tofu import MODEL_UTILITY_KEYS
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow
FQ = {(-0.8, 0): 0.40, (-0.8, 1): 0.58, (-0.8, 2): 0.58, (0.0, 0): 0.0021, (0.0, 1): 0.0123,
      (0.0, 2): 0.0021}


def fake_eval(run_dir, fq: float, mu_parts: dict, rng: random.Random) -> None:
    """An eval/ folder shaped like a real QA evaluation."""
    metrics = {k: {"name": k, "value": v, "reason": None} for k, v in mu_parts.items()}
    mu = len(mu_parts) / sum(1 / v for v in mu_parts.values())
    metrics["model_utility"] = {"name": "model_utility", "value": mu, "reason": None,
                                "per_sample": list(mu_parts.values())}
    recs, trs = [], []
    for i in range(10):
        tr = rng.uniform(0.3, 1.5)
        trs.append(tr)
        recs.append({"set": "forget", "index": i, "question": f"q{i}",
                     "probability": rng.uniform(0, 1), "truth_ratio": tr,
                     "rouge_l_recall": rng.uniform(0, 1)})
    for key in ("probability", "rouge_l_recall"):
        vals = [r[key] for r in recs]
        name = "forget_" + ("rouge" if key.startswith("rouge") else key)
        metrics[name] = {"name": name, "value": sum(vals) / 10, "reason": None}
    metrics["forget_truth_ratio"] = {"value": sum(min(t, 1 / t) for t in trs) / 10}
    metrics["forget_quality"] = {"name": "forget_quality", "value": fq, "reason": None,
                                 "per_sample": [0.3]}
    atomic_write_jsonl(run_dir / "eval" / "per_sample.jsonl", recs)
    atomic_write_json(run_dir / "eval" / "summary.json", {
        "task": "qa", "metrics": metrics, "forget_truth_ratios": trs,
        "reference": {"n_truth_ratios": 10}})


@pytest.fixture()
def seeded(ui_env):
    """A demo project with a 3-seed sweep over r in {-0.8, 0}, evaluated (by hand)."""
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.projects.training import build_config
    from sga_core.runs.create import create_run
    from sga_core.runs.seeds import sweep_configs
    from sga_core.runs.status import write_run

    project = create_demo_project(root=ui_env / "workspace")
    project.save_normals(idk_normals(10, 4), "seed")

    def make(group, r):
        return build_config(project, method="sga", method_args={"r": r, "k": 4},
                            training={"seeds": "3", "max_steps": 1}, launch={},
                            model="embedded:smollm2", sweep=group,
                            normals=str(project.normals_path), eval_cfg={"enabled": False})

    rng = random.Random(0)
    for cfg in sweep_configs(make, [-0.8, 0.0], "sw", ui_env / "runs"):
        run_dir = create_run(cfg, ui_env / "runs")
        write_run(run_dir, "completed")
        r, seed = cfg.method_args["r"], cfg.training.seed
        parts = {k: rng.uniform(0.3, 0.9) for k in MODEL_UTILITY_KEYS}
        parts["world_facts_rouge"] = 0.05 if r == 0.0 else 0.2  # the lowest component
        fake_eval(run_dir, FQ[(r, seed)], parts, rng)
    return ui_env


def frame_with(at, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_results_pool_seeds_draw_bars_and_say_how_sure(seeded):
    at = open_page("app_pages/results.py")
    per_run = at.dataframe[0].value
    assert len(per_run) == 6 and "sga r=-0.8 seed 1" in set(per_run["run"])
    pooled = frame_with(at, "configuration")
    assert list(pooled["n"]) == [3, 3]
    assert list(pooled["r"]) == ["-0.8", "0"] and set(pooled["K"]) == {"4"}  # text, no "None"
    row = pooled[pooled["configuration"] == "sga r=-0.8"].iloc[0]
    assert row["FQ"].startswith("0.52 [") and " sd 0.1" in row["FQ"]
    assert row["seeds"] == "0, 1, 2"
    assert any("Student t over seeds" in c.value for c in at.caption)
    # metric versus r: error bars, the seeds as dots, and the suggestion with its certainty
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    fq = next(t for t in spec["data"] if t.get("name") == "FQ")
    assert fq["x"] == [-0.8, 0.0] and fq["error_y"]["array"][0] > 0
    assert any(t.get("name") == "FQ seeds" and len(t["x"]) == 6 for t in spec["data"])
    at.selectbox(key="results.metric").set_value("FQ").run()
    info = " ".join(shown(i.value) for i in at.info)
    assert "Best FQ at r = -0.8" in info and "Clearly different (that r" in info
    assert "): r = 0" in info
    # MU's components, the lowest marked
    parts = frame_with(at, "lowest")
    assert set(parts["lowest"]) == {"world_facts ROUGE-L"}
    assert "retain prob" in parts.columns and len(parts) == 6


def test_one_run_and_two_run_panels(seeded):
    at = open_page("app_pages/results.py")
    unc = frame_with(at, "95% interval")
    assert "forget prob" in set(unc["metric"]) and set(unc["rows"]) == {10}
    assert any("Forget Quality's resolution" in shown(m.value) and "can only take 10 values"
               in shown(m.value) for m in at.markdown)
    cmp_ = frame_with(at, "verdict")
    assert set(cmp_["verdict"]) <= {"A ≠ B", "A ≠ B, negligibly", "within noise"} and \
        len(cmp_) == 3
    at.selectbox(key="results.cmp_b").set_value(at.selectbox(key="results.cmp_a").value).run()
    assert any("two different runs" in c.value for c in at.caption)
    assert not at.exception


def test_rstar_page_shows_the_sweeps_with_their_spread(seeded):
    at = open_page("app_pages/rstar.py")
    assert at.selectbox(key="rstar.results.sweep").options[0].startswith("sw")
    assert any("Best" in i.value for i in at.info)


def test_train_page_launches_over_seeds(ui_env, tiny_model_dir, monkeypatch):
    from sga_core.runs import queue
    from sga_core.runs.listing import list_runs
    from tests.ui.test_train import fill_tiny_form

    monkeypatch.setattr(queue, "ensure_runner", lambda *a, **k: None)
    at = fill_tiny_form(open_page("app_pages/train.py"), tiny_model_dir)
    assert at.button(key="train.launch").label == "Launch"
    at.text_input(key="train.f.t.seeds").set_value("3").run()
    # the button says how many runs it makes (the field is kept from launch to launch)
    assert at.button(key="train.launch").label == "Launch 3 runs (one per seed)"
    at.button(key="train.launch").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Queued 3 runs, seeds 0, 1, 2" in s.value for s in at.success)
    runs = list_runs(ui_env / "runs")
    assert sorted(r["seed"] for r in runs) == [0, 1, 2] and len({r["group"] for r in runs}) == 1
    # a sweep over two r values with 2 seeds: 4 runs, 2 groups
    at.text_input(key="train.f.t.seeds").set_value("2").run()
    at.text_input(key="train.sweep_values").set_value("-0.8, 0").run()
    at.button(key="train.sweep").click().run()
    assert any("Queued 4 runs" in s.value for s in at.success), [e.value for e in at.error]
    sweep = [r for r in list_runs(ui_env / "runs") if r["sweep"]]
    assert len(sweep) == 4 and len({r["group"] for r in sweep}) == 2


def test_runs_page_plots_evaluation_during_training(ui_env):
    from sga_core.config import TrainConfig
    from sga_core.runs.create import create_run
    from sga_core.runs.status import write_run
    from sga_core.train.eval_steps import EVAL_STEPS_FILE

    forget = ui_env / "f.jsonl"
    forget.write_text('{"question": "q", "answer": "a"}\n')
    run_dir = create_run(TrainConfig.from_dict({
        "run_id": "with-steps", "method": "ga", "data": {"forget": str(forget)},
        "training": {"eval_every": 2}, "eval": {"enabled": False}}), ui_env / "runs")
    recs = [{"step": s, "forget_rows": 10, "retain_rows": 6, "rouge_rows": 2, "eval_s": 1.5,
             "forget_quality": fq, "forget_probability": 0.9 - s / 10, "best": best,
             "reasons": {"retain_rouge": None}}
            for s, fq, best in ((0, 0.01, True), (2, 0.4, True), (4, 0.2, False))]
    atomic_write_jsonl(run_dir / EVAL_STEPS_FILE, recs)
    write_run(run_dir, "completed", best_step=2, best_metric="forget_quality", best_value=0.4,
              best_model="best_model")
    at = open_page("app_pages/runs.py")
    at.radio(key="runs.filter").set_value("all projects").run()  # not the demo's data
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    steps = next(c for c in charts if "evaluation during training" in json.dumps(
        c.get("layout", {})))
    assert {t["name"] for t in steps["data"]} == {"forget_quality", "forget_probability"}
    assert any(s.get("x0") == 2 for s in steps["layout"].get("shapes", []))
    assert any("Best forget_quality: 0.4 at step 2 (its model is kept in best_model/)"
               in shown(c.value) for c in at.caption)
