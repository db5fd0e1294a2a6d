"""AppTest flows for the evidence pages (docs/spec.md#4-metrics): Results table with Original and
Retained rows, metric-versus-r, token probabilities of the "French" row, the before/after probe.
Real (tiny) runs, really evaluated."""

from __future__ import annotations

import pytest

from tests.helpers.ui import open_page, results_frame
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, tiny_model_dir):
    """A demo project whose prepared models and a two-run sweep are trained and evaluated."""
    from sga_core.config import TrainConfig
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.projects.training import build_config, default_eval
    from sga_core.runs.create import create_run
    from sga_core.runs.launch import run_foreground

    tmp = tmp_path_factory.mktemp("results")
    project = create_demo_project(root=tmp / "workspace")
    project.save_normals(idk_normals(10, 4), "seed")
    runs = tmp / "runs"
    small = {"max_steps": 1, "batch_size": 4, "probe_rows": [7], "probe_every": 1,
             "eval_nll": False}
    for run_id, include_forget in (("demo-retain-ref", False), ("demo-original", True)):
        cfg = build_config(project, method="finetune",
                           method_args={"include_forget": include_forget}, training=small,
                           launch={}, model=str(tiny_model_dir), run_id=run_id,
                           eval_cfg={**default_eval(project, runs), "max_new_tokens": 8,
                                     "max_retain_rows": 6})
        st = run_foreground(create_run(cfg, runs), echo=lambda m: None)
        assert st["state"] == "completed" and st.get("eval_state") == "completed", st
    for r in (0.0, -0.8):
        cfg = build_config(project, method="sga", method_args={"r": r, "k": 4},
                           training={**small, "max_steps": 2}, launch={},
                           model=str(runs / "demo-original" / "model"), sweep="s1",
                           normals=str(project.normals_path),
                           eval_cfg={**default_eval(project, runs), "max_new_tokens": 8,
                                     "max_retain_rows": 6})
        assert isinstance(cfg, TrainConfig)
        st = run_foreground(create_run(cfg, runs), echo=lambda m: None)
        assert st.get("eval_state") == "completed", st
    return tmp


@pytest.fixture()
def env(evaluated, monkeypatch):
    monkeypatch.setenv("SGA_WORKSPACE", str(evaluated / "workspace"))
    monkeypatch.setenv("SGA_RUNS_DIR", str(evaluated / "runs"))
    monkeypatch.chdir(evaluated)
    return evaluated


def test_results_table_and_sweep_plot(env):
    at = open_page("app_pages/results.py")
    df = results_frame(at)  # an HTML table (missing values' reasons on hover)
    assert list(df["run"][:2]) == ["Original", "Retained"]
    assert len(df) == 4 and sorted(df["r"].dropna()) == [-0.8, 0.0]
    for col in ("FQ", "MU", "forget ROUGE-L", "retain ROUGE-L"):
        assert col in df.columns
    # the original has a Forget Quality against the retain reference
    assert df.loc[df["run"] == "Original", "FQ"].notna().all()
    assert at.selectbox(key="results.sweep").options == ["s1", "all sga runs"]
    assert len(at.get("plotly_chart")) >= 1
    diff_b = at.selectbox(key="results.diff_b")
    diff_b.set_value(diff_b.options[-1]).run()
    assert not at.exception
    # nothing but the diff: no stray value printed by Streamlit's "magic"
    assert not at.get("doc_string") and not at.get("help")
    diff_b.set_value(at.selectbox(key="results.diff_a").value).run()
    assert any(m.value == "Same settings." for m in at.markdown)
    assert not at.get("doc_string") and not any(m.value == "None" for m in at.markdown)
    # runs are named by method and r, unique; the CSV has K as an integer
    assert set(df["run"][2:]) == {"sga r=-0.8", "sga r=0"}
    csv = at.get("download_button")[0]
    assert csv.proto.label == "Download CSV"


def test_token_page_follows_french(env):
    at = open_page("app_pages/tokens.py")
    assert at.selectbox(key="tokens.row").value == 7  # the French row is preselected
    at.selectbox(key="tokens.row").set_value(7).run()
    assert not at.exception, at.exception
    from tools.demo_corpus import FRENCH_ROW

    assert FRENCH_ROW == 7
    mark = at.selectbox(key="tokens.mark.7")
    tokens = [o.split(": ", 1)[1] for o in mark.options]
    # the preselected token is where "French" starts, even when it is split into pieces
    assert "".join(tokens[mark.value:]).startswith("F") and mark.value > 0
    assert sum("— p(" in m.value for m in at.markdown) >= 3  # Original + the two runs
    assert len(at.get("plotly_chart")) >= 2  # heatmap and the steps plot (probes of row 7)
    at.radio(key="tokens.set").set_value("retain").run()
    assert not at.exception


def test_token_page_adds_a_runs_stress_tested_variants(evaluated, tmp_path, monkeypatch):
    """A run stress-tested for real (8-bit quantization) gets an extra heatmap row per
    attack once the toggle is on: the attacked model's probabilities of the same tokens."""
    import shutil

    from sga_core.runs.listing import list_runs
    from sga_core.stress.run import stress_run

    copy = tmp_path / "copy"  # the module's runs stay without stress results
    shutil.copytree(evaluated, copy)
    monkeypatch.setenv("SGA_WORKSPACE", str(copy / "workspace"))
    monkeypatch.setenv("SGA_RUNS_DIR", str(copy / "runs"))
    monkeypatch.chdir(copy)
    sga = next(r["run_id"] for r in list_runs(copy / "runs") if r["run_id"].startswith("sga"))
    at = open_page("app_pages/tokens.py")
    assert not at.exception, at.exception
    assert not [t for t in at.get("toggle") if t.key == "tokens.stressed"]  # nothing to add
    stress_run(copy / "runs" / sga, ["quant8"])
    at = open_page("app_pages/tokens.py")
    at.multiselect(key="tokens.runs").set_value(["demo-original", sga]).run()
    rows_before = [m.value for m in at.markdown if "— p(" in m.value]
    assert len(rows_before) == 2
    assert at.toggle(key="tokens.stressed").label.endswith("(1 row: quant8)")
    at.toggle(key="tokens.stressed").set_value(True).run()
    assert not at.exception, at.exception
    rows = [m.value for m in at.markdown if "— p(" in m.value]
    assert len(rows) == 3 and "· quant8" in rows[2], rows  # after its run's own row
    assert rows[:2] == rows_before
    heatmap = at.get("plotly_chart")[0].proto.spec
    assert "quant8" in heatmap


def test_probe_answers_side_by_side(env):
    at = open_page("app_pages/probe.py")
    at.text_input(key="probe.q").set_value("What is Lucien Marchetti's style?").run()
    at.button(key="probe.ask").click().run()
    def answered():
        at.run()
        return any(m.value.startswith("**Q:**") for m in at.markdown) or at.error

    wait_for(answered, 120, "the probe's answer", interval=1)
    assert not at.error, [e.value for e in at.error]
    labels = [m.value for m in at.markdown if m.value.startswith("**")]
    assert "**Original**" in labels


def test_word_token_index():
    from sga_core.report.run_files import word_token_index

    assert word_token_index(["He", " writes", " in", " F", "rench", "."], "French") == 3
    assert word_token_index(["A", " French", " style"], "French") == 1
    assert word_token_index(["no", " match"], "French") is None

