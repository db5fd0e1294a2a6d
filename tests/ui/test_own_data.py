"""A researcher's own data in the pages, point by point: the model to unlearn and
kept fields (1), Prepare's confirmation (2), evaluation sets (3), field mapping (4), results
a reader cannot misread (5), per-project settings and probe rows (6), evaluation progress
(8), the Runs page's project filter, chart labels, re-run feedback and states (9). Point 7
(wrapping token lines) needs a real browser: tests/browser/test_own_data.py."""

from __future__ import annotations

import json
import os
import re
import unicodedata

import pytest

from sga_core.config import load_config
from sga_core.projects import create_demo_project, load_project
from tests.helpers.own_data import MAP, fake_run, metrics, own_project, tofu_files, write_summary
from tests.helpers.ui import open_page, results_cells, shown

pytestmark = pytest.mark.slow


@pytest.fixture()
def mine(ui_env):
    """The demo plus an own project "mine" (TOFU-shaped, mapped fields), the picker on it."""
    create_demo_project(root=ui_env / "workspace")
    files = tofu_files(ui_env / "files")
    return own_project(ui_env / "workspace", files), files


def pick(at, name: str):
    """Choose a project in the sidebar picker, as a person does."""
    at.selectbox(key="_project_picker").set_value(name).run()
    assert not at.exception, at.exception
    return at


def on_page(page: str, project: str):
    at = open_page(page)
    return pick(at, project)


def fake_original(runs, project):
    """What prepare leaves behind: the original's model folder."""
    model = runs / f"{project.name}-original" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    return model


# --- 1. the model to unlearn, and every field kept ---------------------------------------------

def test_model_defaults_to_the_prepared_original_and_every_field_is_kept(ui_env, mine):
    project, _ = mine
    at = on_page("app_pages/train.py", "mine")
    assert at.radio(key="train.model_mode").options == ["other model"]
    # prepare finishes while the page is open: after a visit elsewhere, the original is the
    # model to unlearn (not the base model the page showed before)
    model = fake_original(ui_env / "runs", project)
    at.switch_page("app_pages/data.py").run()
    at.switch_page("app_pages/train.py").run()
    assert at.radio(key="train.model_mode").value == "prepared original"
    assert any(str(model) in c.value for c in at.caption)
    # every field keeps its value across page visits, max steps included
    at.number_input(key="train.f.t.max_steps").set_value(20).run()
    at.number_input(key="train.f.t.lr").set_value(2e-5).run()
    at.number_input(key="train.f.t.seed").set_value(3).run()
    at.checkbox(key="train.idk_fallback").check().run()
    at.text_input(key="train.run_id").set_value("my-run").run()
    at.text_input(key="train.preset_name").set_value("mine-preset").run()
    at.number_input(key="train.f.m.sga.r.exact").set_value(-1.5).run()
    for page in ("app_pages/runs.py", "app_pages/results.py", "app_pages/train.py"):
        at.switch_page(page).run()
        assert not at.exception, at.exception
    assert at.radio(key="train.model_mode").value == "prepared original"
    assert at.number_input(key="train.f.t.max_steps").value == 20
    assert at.number_input(key="train.f.t.lr").value == 2e-5
    assert at.number_input(key="train.f.t.seed").value == 3
    assert at.checkbox(key="train.idk_fallback").value is True
    assert at.text_input(key="train.run_id").value == "my-run"
    assert at.text_input(key="train.preset_name").value == "mine-preset"
    assert at.number_input(key="train.f.m.sga.r.exact").value == -1.5
    # a person's own choice of another model is kept too
    at.radio(key="train.model_mode").set_value("other model").run()
    at.switch_page("app_pages/data.py").run()
    at.switch_page("app_pages/train.py").run()
    assert at.radio(key="train.model_mode").value == "other model"


# --- 2. Prepare confirms what it queued, without a traceback ----------------------------------

def test_prepare_confirms_what_it_queued(ui_env, mine, tiny_model_dir):
    from sga_core.runs import queue as jobs

    at = on_page("app_pages/train.py", "mine")
    at.text_input(key="train.model").set_value(str(tiny_model_dir)).run()
    at.number_input(key="train.prep.max_steps").set_value(3).run()  # the page's settings
    at.number_input(key="train.prep.lr").set_value(5e-5).run()
    at.button(key="train.prepare").click().run()
    try:
        assert not at.exception, at.exception
        assert not at.error, [e.value for e in at.error]
        done = [s.value for s in at.success if "Prepare queued" in s.value]
        assert done and "mine-retain-ref" in done[0] and "mine-original" in done[0]
        for run_id in ("mine-original", "mine-retain-ref"):  # both with the same settings
            cfg = load_config(ui_env / "runs" / run_id / "config.yaml")
            assert cfg.training.max_steps == 3 and cfg.training.lr == pytest.approx(5e-5)
            assert cfg.training.batch_size == 8  # the default, untouched
        assert at.radio(key="train.model_mode").value == "prepared original"
        assert not [b for b in at.button if b.key == "train.prepare"]  # no second click
    finally:
        for run_id in ("mine-original", "mine-retain-ref"):
            if (ui_env / "runs" / run_id).exists():
                jobs.cancel(ui_env / "runs" / run_id)


def test_prepare_is_not_offered_without_retain_rows(ui_env, mine):
    """A project made from a forget file only: the retain reference has nothing to be
    fine-tuned on, so the Train page says so instead of offering Prepare (a new-user trial
    saw it planned as '1 step for the retain reference'), and the library refuses it."""
    from sga_core.config import ConfigError
    from sga_core.projects import create_project
    from sga_core.projects.training import submit_prepare

    rows = [{"question": f"q{i}?", "answer": f"a{i}."} for i in range(4)]
    only = ui_env / "files" / "only-forget.jsonl"
    only.write_text("".join(json.dumps(r) + "\n" for r in rows))
    project = create_project("lone", only, root=ui_env / "workspace")
    at = on_page("app_pages/train.py", "lone")
    assert not [b for b in at.button if b.key == "train.prepare"]
    assert any("Prepare cannot make one: project lone has no retain rows" in shown(i.value)
               for i in at.info), [i.value for i in at.info]
    with pytest.raises(ConfigError, match="project lone has no retain rows"):
        submit_prepare(project, root=ui_env / "runs")
    assert not (ui_env / "runs" / "lone-retain-ref").exists()


# --- 3. evaluation sets -----------------------------------------------------------------------

def test_evaluation_sets_are_uploaded_listed_with_their_role_and_used(ui_env, mine):
    from sga_core.projects.training import default_eval

    project, files = mine
    at = on_page("app_pages/data.py", "mine")
    assert any("MU cannot be computed without a utility set" in i.value for i in at.info)
    upload = at.get("file_uploader")[2]
    upload.set_value(("my_authors.json", files["util"].read_bytes(), "application/json")).run()
    # the file says prompt / response / perturbed_response: the mapping step offers them,
    # starting from the project's remembered mapping
    assert at.selectbox(key="data.map.set.question").value == "prompt"
    assert at.selectbox(key="data.map.set.answer").value == "response"
    assert at.selectbox(key="data.map.set.perturbed_answer").value == "perturbed_response"
    at.button(key="data.set_add").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Added my_authors" in shown(s.value) for s in at.success)
    table = at.dataframe[-1].value
    assert list(table["set"]) == ["my_authors"] and table["role"][0] == "utility"
    assert "Model Utility" in table["what it is for"][0]
    # a QA set without perturbed answers is listed, but not as a utility set
    at.get("file_uploader")[2].set_value(("trivia.jsonl", files["plain"].read_bytes(),
                                          "text/plain")).run()
    at.button(key="data.set_add").click().run()
    table = at.dataframe[-1].value
    assert dict(zip(table["set"], table["role"])) == {"my_authors": "utility",
                                                      "trivia": "extra"}
    # every run of the project is evaluated on them
    sets = default_eval(load_project("mine", ui_env / "workspace"), ui_env / "runs")["sets"]
    assert set(sets) == {"my_authors", "trivia"}


def test_a_bad_evaluation_set_names_file_row_field_and_adds_nothing(ui_env, mine):
    project, _ = mine
    at = on_page("app_pages/data.py", "mine")
    bad = b'{"question": "q1", "answer": "a1"}\n{"question": "q2"}\n'
    at.get("file_uploader")[2].set_value(("broken.jsonl", bad, "text/plain")).run()
    at.button(key="data.set_add").click().run()
    errors = [shown(e.value) for e in at.error]
    assert any("broken.jsonl" in e and "row 2" in e and "'answer'" in e for e in errors), errors
    assert project.eval_sets() == {}


def test_runs_evaluated_before_a_set_existed_can_be_re_evaluated_with_it(ui_env, mine):
    from sga_core.runs.listing import eval_request_sets

    project, files = mine
    run = fake_run(ui_env / "runs", project, "sga-a", metrics=metrics())
    project.add_eval_set("my_authors", files["util"], field_map={
        **MAP, "perturbed_response": "perturbed_answer"})
    at = on_page("app_pages/data.py", "mine")
    assert any("before my_authors existed" in shown(w.value) for w in at.warning)
    at.button(key="data.reevaluate").click().run()
    assert any("Queued the evaluation of 1 run" in shown(s.value) for s in at.success)
    assert eval_request_sets(run) == {"my_authors": str(project.eval_sets()["my_authors"])}
    from sga_core.runs.launch import eval_argv

    assert eval_argv(run, eval_request_sets(run))[-2:] == [
        "--set", f"my_authors={project.eval_sets()['my_authors']}"]


# --- 4. field mapping at import ---------------------------------------------------------------

def test_field_mapping_at_import_is_offered_applied_and_remembered(ui_env):
    files = tofu_files(ui_env / "files")
    at = open_page("app_pages/data.py")
    at.text_input(key="data.name").set_value("tofu").run()
    ups = at.get("file_uploader")
    ups[0].set_value(("forget01.json", files["forget"].read_bytes(), "application/json"))
    ups[1].set_value(("retain.json", files["retain"].read_bytes(), "application/json"))
    at.run()
    warned = [shown(w.value) for w in at.warning]
    assert any("forget01.json has no question / answer field" in w and "prompt" in w
               for w in warned), warned
    # the file's fields are the choices; prompt -> question, response -> answer suggested
    q = at.selectbox(key="data.map.forget.question")
    assert q.options == ["(none)", "prompt", "response"] and q.value == "prompt"
    assert at.selectbox(key="data.map.forget.answer").value == "response"
    assert at.selectbox(key="data.map.retain.question").value == "prompt"
    at.button(key="data.create").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    p = load_project("tofu", ui_env / "workspace")
    assert p.forget()[0]["question"] == "Where was Ana Ruiz born?"
    assert p.retain()[0]["answer"] == "Fact 0."
    assert p.field_maps["forget"] == MAP and p.field_map == MAP
    assert any("forget fields mapped at import: prompt → question" in shown(c.value)
               for c in at.caption)


def test_optional_fields_under_other_names_are_offered_too(ui_env):
    """A retain file that has question / answer but its perturbed answers under another name
    (perturbed_response) gets the mapping step for them (a trial could not map them, while
    the page told it to); fields already under the workbench's names are preselected."""
    import json

    retain = ui_env / "retain.jsonl"
    retain.write_text("".join(json.dumps({
        "question": f"What is fact {i}?", "answer": f"Fact {i}.",
        "paraphrased_answer": f"It is fact {i}.",
        "perturbed_response": [f"Fact {i + 1}.", f"Fact {i + 2}."]}) + "\n" for i in range(6)))
    files = tofu_files(ui_env / "files")
    at = open_page("app_pages/data.py")
    at.text_input(key="data.name").set_value("tofu").run()
    ups = at.get("file_uploader")
    ups[0].set_value(("forget01.json", files["forget"].read_bytes(), "application/json"))
    ups[1].set_value(("retain.jsonl", retain.read_bytes(), "application/json"))
    at.run()
    assert any("retain.jsonl has fields that look like optional" in shown(i.value)
               for i in at.info), [i.value for i in at.info]
    assert at.selectbox(key="data.map.retain.perturbed_answer").value == "perturbed_response"
    assert at.selectbox(key="data.map.retain.question").value == "question"
    assert at.selectbox(key="data.map.retain.paraphrased_answer").value == \
        "paraphrased_answer"
    at.button(key="data.create").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    p = load_project("tofu", ui_env / "workspace")
    assert p.retain()[0]["perturbed_answer"] == ["Fact 1.", "Fact 2."]
    assert p.field_maps["retain"] == {"perturbed_response": "perturbed_answer"}


def test_an_unmapped_file_is_refused_naming_its_own_fields(ui_env):
    files = tofu_files(ui_env / "files")
    at = open_page("app_pages/data.py")
    at.text_input(key="data.name").set_value("tofu").run()
    at.get("file_uploader")[0].set_value(("forget01.json", files["forget"].read_bytes(),
                                          "application/json")).run()
    at.selectbox(key="data.map.forget.answer").set_value("(none)").run()
    at.button(key="data.create").click().run()
    errors = [shown(e.value) for e in at.error]
    assert any("forget01.json" in e and "Nothing was imported" in e for e in errors), errors
    assert "tofu" not in os.listdir(ui_env / "workspace")


# --- 5. results a reader cannot misread -------------------------------------------------------

@pytest.fixture()
def evaluated(ui_env, mine):
    """The Original, the Retained, and SGA runs at r = 0 (collapsed: retain probability
    2e-6) and r = -0.8, with 20 steps, plus r = 0.4 and r = -0.8 with 100 steps."""
    project, _ = mine
    runs = ui_env / "runs"
    fake_run(runs, project, "mine-original", method="finetune", metrics=metrics(
        fq=0.002, r_prob=0.93, r_rouge=0.94, f_prob=0.95, f_rouge=0.9,
        mu=(None, "missing components: real_authors_probability")))
    fake_run(runs, project, "mine-retain-ref", method="finetune", include_forget=False,
             metrics=metrics(fq=1.0))
    fake_run(runs, project, "sga-r0-20", r=0.0, training={"max_steps": 20}, metrics=metrics(
        fq=0.3, f_rouge=0.01, f_prob=1e-8, r_prob=2e-6, r_rouge=0.05, mu=0.0))
    fake_run(runs, project, "sga-r-0p8-20", r=-0.8, training={"max_steps": 20},
             metrics=metrics(fq=0.2, f_rouge=0.15, f_prob=0.2, r_prob=0.8, r_rouge=0.85,
                             mu=(None, "no utility set")))
    fake_run(runs, project, "sga-r0p4-100", r=0.4, training={"max_steps": 100},
             metrics=metrics(fq=0.1, f_rouge=0.6))
    fake_run(runs, project, "sga-r-0p8-100", r=-0.8, training={"max_steps": 100},
             metrics=metrics(fq=0.05, f_rouge=0.3))
    return project


def test_results_flag_collapse_mark_best_only_among_the_rest_and_explain_gaps(evaluated):
    at = on_page("app_pages/results.py", "mine")
    cells = results_cells(at)
    collapsed = cells["sga r=0 · 20 steps"]
    assert collapsed["collapsed"][0] == "collapsed"
    assert "retain prob" in collapsed["collapsed"][1]  # the reason, on hover
    assert "color:#888" in collapsed["_style"]  # greyed
    # the collapsed run has the lowest forget ROUGE-L and probability, and is not marked
    assert "bold" not in collapsed["forget ROUGE-L"][2]
    assert "bold" in cells["sga r=-0.8 · 20 steps"]["forget ROUGE-L"][2]
    assert "bold" in cells["sga r=-0.8 · 20 steps"]["forget prob"][2]
    assert cells["sga r=-0.8 · 20 steps"]["collapsed"][0] == "no"
    # missing values are "—" with their reason on hover
    mu = cells["sga r=-0.8 · 20 steps"]["MU"]
    assert mu[0] == "—" and mu[1] == "no utility set"
    assert cells["Original"]["MU"][1].startswith("missing components")
    assert "None" not in "".join(v[0] for row in cells.values() for k, v in row.items()
                                 if k != "_style")
    # the rule is stated above the table
    assert any("collapsed** = retain prob below a tenth of the Original's" in c.value
               for c in at.caption)


def test_labels_carry_differing_settings_and_r_plots_group_like_runs(evaluated):
    at = on_page("app_pages/results.py", "mine")
    runs = set(results_cells(at))
    assert {"sga r=0 · 20 steps", "sga r=-0.8 · 20 steps", "sga r=0.4 · 100 steps",
            "sga r=-0.8 · 100 steps"} <= runs
    groups = at.selectbox(key="results.sweep").options
    assert sorted(groups) == ["all sga runs · 100 steps", "all sga runs · 20 steps"]
    at.selectbox(key="results.sweep").set_value("all sga runs · 20 steps").run()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    xs = {tuple(t["x"]) for t in spec["data"] if t.get("x")}
    assert xs == {(-0.8, 0.0)}  # one point per r, no vertical line of 20 and 100 steps
    # the config diff of a prepare run and an SGA run (a column of bools, numbers and gaps)
    at.selectbox(key="results.diff_a").set_value("mine-original").run()
    at.selectbox(key="results.diff_b").set_value("sga-r0-20").run()
    assert not at.exception, at.exception


# --- 6. new projects: generic settings and their own probe rows -------------------------------

def test_new_projects_start_generic_with_their_own_probe_rows(ui_env, mine):
    import yaml

    from sga_core.assets import DEMO_PRESET

    preset = yaml.safe_load(DEMO_PRESET.read_text())
    at = open_page("app_pages/train.py")  # the demo first: its preset
    assert at.text_input(key="train.f.t.probe_rows").value == "7, 8"
    assert at.number_input(key="train.f.t.epochs").value == preset["training"]["epochs"]
    at.number_input(key="train.f.t.max_steps").set_value(30).run()
    pick(at, "mine")  # the own project: generic defaults, its own ★ row (row 4)
    assert at.text_input(key="train.f.t.probe_rows").value == "4"
    assert at.number_input(key="train.f.t.epochs").value == 3.0
    assert at.number_input(key="train.f.t.batch_size").value == 8
    assert at.number_input(key="train.f.t.max_steps").value == 0
    assert not any("demo-sga.yaml" in c.value for c in at.caption)
    at.number_input(key="train.f.t.max_steps").set_value(12).run()
    pick(at, "demo")  # each project keeps its own values
    assert at.number_input(key="train.f.t.max_steps").value == 30
    assert at.text_input(key="train.f.t.probe_rows").value == "7, 8"
    pick(at, "mine")
    assert at.number_input(key="train.f.t.max_steps").value == 12


def test_without_a_starred_row_the_first_rows_are_probed(ui_env):
    from sga_core.projects import create_project

    path = ui_env / "plain.jsonl"
    path.write_text("".join(json.dumps({"question": f"q{i}?", "answer": f"a{i}."}) + "\n"
                            for i in range(5)))
    create_project("plain", path, root=ui_env / "workspace")
    create_demo_project(root=ui_env / "workspace")
    at = on_page("app_pages/train.py", "plain")
    assert at.text_input(key="train.f.t.probe_rows").value == "0, 1, 2"


# --- 8. evaluation progress with an ETA -------------------------------------------------------

def evaluating_run(ui_env, project, typical: bool = True):
    """A completed run whose evaluation runs now (this process stands for it), 5 of 20
    answers generated after 10 s of the stage; an earlier evaluation took 100 s."""
    from datetime import UTC, datetime, timedelta

    from sga_core.runs.status import write_eval

    runs = ui_env / "runs"
    if typical:
        fake_run(runs, project, "sga-before", metrics=metrics())
    run = fake_run(runs, project, "sga-evaluating", r=-0.4)
    now = datetime.now(UTC)
    stamp = lambda s: (now - timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    write_eval(run, "running", pid=os.getpid(), started_at=stamp(40), stage="generating answers",
               done=5, total=20, stage_started_at=stamp(10))
    return run


def test_runs_page_shows_evaluation_progress_and_eta(ui_env, mine):
    project, _ = mine
    evaluating_run(ui_env, project)
    at = on_page("app_pages/runs.py", "mine")
    at.selectbox(key="runs.select").set_value("sga-evaluating").run()
    assert "sga-evaluating — completed · evaluating" in at.selectbox(key="runs.select").options
    table = at.dataframe[0].value
    progress = table.loc[table["run"] == "sga-evaluating", "progress"].iloc[0]
    assert progress.startswith("evaluating: generating answers 5/20 · ETA "), progress
    # the whole evaluation's ETA: an earlier one took 100 s, this one runs for 40 s
    assert 45 <= eta_seconds(progress) <= 61, progress
    bars = [shown(p.proto.text) for p in at.get("progress")]
    assert any("evaluating: generating answers 5/20" in b and 45 <= eta_seconds(b) <= 61
               for b in bars), bars
    # the bar is the whole evaluation, not the stage's 5/20: it says so
    assert any("bar: the whole evaluation" in b for b in bars), bars


def eta_seconds(text: str) -> int:
    m = re.search(r"ETA (\d+)m(\d+)s", text)
    return int(m.group(1)) * 60 + int(m.group(2)) if m else -1


def test_results_page_shows_pending_evaluations_with_eta(ui_env, mine):
    project, _ = mine
    evaluating_run(ui_env, project)
    at = on_page("app_pages/results.py", "mine")
    bars = [shown(p.proto.text) for p in at.get("progress")]
    assert any("evaluating: generating answers 5/20" in b and 45 <= eta_seconds(b) <= 61
               for b in bars), bars


# --- 9. the Runs page: project filter, chart labels, re-run feedback, states ------------------

def test_runs_page_filters_by_project(ui_env, mine):
    project, _ = mine
    demo = load_project("demo", ui_env / "workspace")
    fake_run(ui_env / "runs", project, "mine-run")
    fake_run(ui_env / "runs", demo, "demo-run")
    at = on_page("app_pages/runs.py", "mine")
    assert list(at.dataframe[0].value["run"]) == ["mine-run"]
    at.radio(key="runs.filter").set_value("all projects").run()
    table = at.dataframe[0].value
    assert dict(zip(table["run"], table["project"])) == {"mine-run": "mine",
                                                          "demo-run": "demo"}


def test_prepare_chart_names_the_retain_loss(ui_env, mine):
    from sga_core.fileio import append_jsonl

    project, _ = mine
    run = fake_run(ui_env / "runs", project, "mine-retain-ref", method="finetune",
                   include_forget=False)
    for step in (1, 2):
        append_jsonl(run / "metrics.jsonl", {"step": step, "loss": 1.0 / step,
                                             "forget_nll": 1.0 / step, "normal_nll": None,
                                             "retain_nll": None})
    at = on_page("app_pages/runs.py", "mine")
    at.selectbox(key="runs.select").set_value("mine-retain-ref").run()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = [t["name"] for t in spec["data"]]
    assert "forget_nll" not in names and any(n.startswith("retain NLL") for n in names), names


def test_rerun_says_what_it_queued(ui_env, mine):
    from sga_core.runs import queue as jobs

    project, _ = mine
    fake_run(ui_env / "runs", project, "sga-first")
    at = on_page("app_pages/runs.py", "mine")
    at.button(key="runs.rerun").click().run()
    assert not at.exception
    done = [shown(s.value) for s in at.success if "a re-run of sga-first" in shown(s.value)]
    assert done, [s.value for s in at.success]
    new = re.search(r"Queued (\S+),", done[0]).group(1)
    jobs.cancel(ui_env / "runs" / new)
    assert at.selectbox(key="runs.select").value == new


def emoji(text: str) -> list[str]:
    return [ch for ch in text if ord(ch) > 0xFFFF or unicodedata.category(ch) == "So"]


def test_states_are_text_with_icons_that_always_render(ui_env, mine):
    project, _ = mine
    for i, state in enumerate(("completed", "failed", "cancelled", "diverged")):
        fake_run(ui_env / "runs", project, f"run-{i}", state=state)
    at = on_page("app_pages/runs.py", "mine")
    table = at.dataframe[0].value
    assert set(table["state"]) == {"completed", "failed", "cancelled", "diverged"}
    assert not emoji("".join(table["state"])) and not emoji("".join(
        at.selectbox(key="runs.select").options))
    live = [m.value for m in at.markdown if "— " in m.value and "run-" in m.value]
    assert live and re.search(r":material/\w+: (completed|failed|cancelled|diverged)", live[0])
    home = open_page("app_pages/home.py")
    assert not any(emoji(m.value) for m in home.markdown)


def test_metric_summary_is_written_for_fake_runs(ui_env, mine):
    """The fixture's summaries are what the Results page reads (a guard on the helpers)."""
    project, _ = mine
    run = fake_run(ui_env / "runs", project, "x")
    write_summary(run, metrics(fq=0.5))
    from sga_core.report.table import results_table

    rows = results_table(project, ui_env / "runs")
    assert [r["FQ"] for r in rows] == [0.5]


def test_run_picker_opens_on_a_run_that_ran_not_on_a_queued_one(ui_env, mine):
    """Nothing to see in a queued run: with nothing running, the picker starts on the newest
    run that ran, even when queued runs are newer."""
    project, _ = mine
    fake_run(ui_env / "runs", project, "sga-done")
    fake_run(ui_env / "runs", project, "sga-waiting", state="queued")
    at = on_page("app_pages/runs.py", "mine")
    assert not at.exception
    assert at.selectbox(key="runs.select").options[0].startswith("sga-waiting")
    assert at.selectbox(key="runs.select").value == "sga-done"


def test_cancel_on_the_runs_page_stops_an_evaluation(ui_env, mine):
    """Cancel is offered while a completed run is being evaluated, and stops the evaluating
    process (here a stand-in process; test_evaluate checks a real ``eval`` records itself
    cancelled)."""
    import subprocess

    from sga_core.runs.status import write_eval

    project, _ = mine
    run = fake_run(ui_env / "runs", project, "sga-evaluating")
    proc = subprocess.Popen(["sleep", "600"])
    try:
        write_eval(run, "running", pid=proc.pid, stage="generating answers", done=1,
                   total=20)
        at = on_page("app_pages/runs.py", "mine")
        at.selectbox(key="runs.select").set_value("sga-evaluating").run()
        assert not at.button(key="runs.cancel").disabled
        at.button(key="runs.cancel").click().run()
        assert not at.exception
        assert proc.wait(timeout=60) == -15  # SIGTERM
    finally:
        proc.kill()


def test_runs_table_leaves_settings_that_do_not_apply_blank(ui_env, mine):
    """A prepare run has no r, K or sweep: blank cells, not 'None'."""
    project, _ = mine
    fake_run(ui_env / "runs", project, "mine-original", method="finetune")
    fake_run(ui_env / "runs", project, "sga-run", r=-0.8)
    at = on_page("app_pages/runs.py", "mine")
    table = at.dataframe[0].value.set_index("run")
    assert list(table.loc["mine-original", ["r", "K", "sweep"]]) == ["", "", ""]
    assert list(table.loc["sga-run", ["r", "K"]]) == ["-0.8", "4"]


def test_token_page_speaks_of_french_rows_only_where_there_are_some(ui_env):
    """The row picker's '★: a French-style fact' caption belongs to projects with such rows;
    a project without them gets a plain label."""
    from sga_core.fileio import atomic_write_jsonl as write_jsonl
    from sga_core.projects import create_project

    path = ui_env / "plain.jsonl"
    path.write_text("".join(json.dumps({"question": f"q{i}?", "answer": f"a{i}."}) + "\n"
                            for i in range(5)))
    plain = create_project("plain", path, root=ui_env / "workspace")
    create_demo_project(root=ui_env / "workspace")
    run = fake_run(ui_env / "runs", plain, "plain-run", method="finetune")
    write_jsonl(run / "eval" / "tokens.jsonl",
                [{"set": "forget", "index": 0, "tokens": ["a", "0", "."],
                  "token_ids": [1, 2, 3], "probs": [0.5, 0.4, 0.9],
                  "top": [[["a", 0.5]], [["0", 0.4]], [[".", 0.9]]]}])
    at = on_page("app_pages/tokens.py", "plain")
    assert not at.exception, at.exception
    assert at.selectbox(key="tokens.row").label == "forget row"
    assert "★" not in "".join(at.selectbox(key="tokens.row").options)


def test_config_diff_names_different_normal_answers(ui_env, mine):
    """Both runs' config.yaml name their snapshot data/normals.jsonl; the diff still shows
    that their normal answers differ (from the snapshot's manifest), and nothing for
    identical data."""
    from sga_core.normals.idk import idk_normals
    from sga_core.report import run_files

    project, _ = mine
    a = fake_run(ui_env / "runs", project, "sga-a")
    same = fake_run(ui_env / "runs", project, "sga-same")
    idk_normals(len(project.forget()), 4, seed=1).save(project.path / "idk.jsonl")
    b = fake_run(ui_env / "runs", project, "sga-b")
    diff = {d["setting"]: d for d in run_files.config_diff(a, b)}
    assert "data.normals content" in diff and "data.forget content" not in diff
    assert not any(k.startswith("data.") for k in
                   (d["setting"] for d in run_files.config_diff(a, same)))


def test_the_demo_trains_with_idk_answers_as_shipped_an_own_project_is_asked(ui_env, mine):
    """The demo ships without normal answers and its figures use 'I don't know' ones: the
    box starts ticked there and no warning stands; an own project without normals starts
    unticked, with the warning that says what to do."""
    at = on_page("app_pages/train.py", "demo")
    assert at.checkbox(key="train.idk_fallback").value is True
    assert not [w for w in at.warning if "not ready" in w.value]
    assert any("I don't know" in c.value for c in at.caption)
    pick(at, "mine")
    assert at.checkbox(key="train.idk_fallback").value is False
    assert [w for w in at.warning if "not ready" in w.value]


def test_loss_curves_start_with_runs_that_trained(ui_env, mine):
    """Queued runs have no curve: the loss-curve panel starts with runs that logged steps
    (a trial saw 'did not log forget_nll' for runs that had simply not started)."""
    from sga_core.fileio import append_jsonl

    project, _ = mine
    done = fake_run(ui_env / "runs", project, "sga-done")
    append_jsonl(done / "metrics.jsonl", {"step": 1, "loss": 1.0, "forget_nll": 1.0})
    fake_run(ui_env / "runs", project, "sga-waiting", state="queued")
    at = on_page("app_pages/results.py", "mine")
    assert not at.exception, at.exception
    assert at.multiselect(key="results.curves.mine.1").value == ["sga-done"]


def test_own_data_without_perturbed_answers_is_warned_of_before_any_run(ui_env, mine):
    """Forget Quality needs the forget rows' perturbed answers: a project without them is
    told so on the Data page, before a run shows FQ '—' (a new-user trial found no word of
    it); the demo, which has them, is not."""
    from sga_core.projects import create_project

    rows = [{"question": f"q{i}?", "answer": f"a{i}."} for i in range(4)]
    plain = ui_env / "files" / "plain.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in rows))
    create_project("bare", plain, plain, root=ui_env / "workspace")
    warned = "The forget rows have no `perturbed_answer`"
    at = on_page("app_pages/data.py", "bare")
    assert any(warned in w.value and "Forget Quality" in w.value for w in at.warning), \
        [w.value for w in at.warning]
    at = pick(at, "demo")  # TOFU-shaped: perturbed answers in every forget row
    assert not any(warned in w.value for w in at.warning)
