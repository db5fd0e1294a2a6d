"""The library side of a researcher's own data (docs/spec.md#32-field-mapping,
docs/decisions/005-collapse-rule.md): field mapping, evaluation sets and their roles, Model Utility
over user-named utility sets, the collapse flag, run labels and r groups, wrapping token lines,
evaluation progress, chart labels, the CLI's --map and project commands."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import pytest

from sga_core.data import DataError, load_dataset
from sga_core.data.mapping import (
    apply_map,
    check_map,
    inspect_fields,
    parse_map,
    suggest_map,
)
from sga_core.projects import ProjectError, create_project
from tests.helpers.own_data import MAP, RETAIN_MAP, fake_run, metrics, own_project, tofu_files

# --- field mapping ----------------------------------------------------------------------------


def test_mapping_reads_other_field_names_and_errors_name_the_files_own_field(tmp_path):
    files = tofu_files(tmp_path)
    with pytest.raises(DataError, match="--map FIELD=question"):
        load_dataset(files["forget"])
    ds = load_dataset(files["forget"], field_map=MAP)
    assert ds.kind == "qa" and ds.rows[0] == {"question": "Where was Ana Ruiz born?",
                                              "answer": "Ana Ruiz was born in Lima."}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"prompt": "q", "response": "a"}, {"prompt": "q2"}]))
    with pytest.raises(DataError) as exc:
        load_dataset(bad, field_map=MAP)
    e = exc.value
    assert (e.file, e.row, e.field) == ("bad.json", 2, "response")
    assert "mapped to 'answer'" in str(e)
    both = tmp_path / "both.jsonl"
    both.write_text(json.dumps({"prompt": "q", "question": "q!", "response": "a"}) + "\n")
    with pytest.raises(DataError) as exc:
        load_dataset(both, field_map=MAP)
    assert (exc.value.row, exc.value.field) == (1, "prompt") and "both" in str(exc.value)


def test_mapping_checks_and_suggestions():
    assert check_map({"prompt": "question", "answer": "answer"}) == {"prompt": "question"}
    with pytest.raises(DataError, match="not a field the workbench reads") as exc:
        check_map({"prompt": "questoin"})
    assert exc.value.field == "prompt"
    with pytest.raises(DataError, match="both 'a' and 'b' are mapped to 'answer'"):
        check_map({"a": "answer", "b": "answer"})
    with pytest.raises(DataError, match="text"):
        check_map({"content": "text"}, "qa")
    assert parse_map(["prompt=question", " response = answer "]) == MAP
    with pytest.raises(DataError, match="FILE_FIELD=WORKBENCH_FIELD"):
        parse_map(["prompt"])
    assert suggest_map(["prompt", "response", "perturbed_response"], "qa") == {
        "prompt": "question", "response": "answer", "perturbed_response": "perturbed_answer"}
    assert suggest_map(["Input", "Output"], "qa") == {"Input": "question", "Output": "answer"}
    assert suggest_map(["content"], "text") == {"content": "text"}
    # a row without a mapped field keeps its other fields (the loader then names what it
    # lacks); a mapping onto a needed field from a field NO row has is refused
    # (tests/unit/data/test_map_sources.py)
    assert apply_map([{"prompt": "q", "x": 1}, {"prompt": "q2", "response": "a2"}], MAP) == [
        {"x": 1, "question": "q"}, {"question": "q2", "answer": "a2"}]


def test_inspect_fields_says_what_is_missing(tmp_path):
    files = tofu_files(tmp_path)
    r = inspect_fields(files["forget"])
    assert (r.fields, r.missing, r.kind, r.target) == (["prompt", "response"],
                                                       ["question", "answer"], None, "qa")
    assert r.suggested == MAP and r.rows == 6
    ok = inspect_fields(files["forget"], mapping=MAP)
    assert ok.missing == [] and ok.kind == "qa"
    text = tmp_path / "doc.jsonl"
    text.write_text(json.dumps({"content": "Once upon a time."}) + "\n")
    t = inspect_fields(text)
    assert t.target == "text" and t.suggested == {"content": "text"}


# --- projects: mapping remembered, evaluation sets with roles, probe rows ---------------------


def test_project_remembers_its_mapping_and_holds_evaluation_sets(tmp_path):
    files = tofu_files(tmp_path / "f")
    p = own_project(tmp_path / "ws", files)
    assert p.field_maps == {"forget": MAP, "retain": RETAIN_MAP} and p.field_map == MAP
    assert p.retain()[0] == {"question": "What is fact 0?", "answer": "Fact 0.",
                             "perturbed_answer": ["Fact 1.", "Fact 2."]}
    entry = p.add_eval_set("my_authors", files["util"],
                           field_map={**MAP, "perturbed_response": "perturbed_answer"})
    assert entry["role"] == "utility" and entry["rows"] == 5 and entry["source"] == \
        "my_authors.json"
    assert p.add_eval_set("trivia", files["plain"])["role"] == "extra"
    assert set(p.eval_sets()) == {"my_authors", "trivia"}
    with pytest.raises(ProjectError, match="already has"):
        p.add_eval_set("trivia", files["plain"])
    for bad in ("forget", "Bad Name", ""):
        with pytest.raises(ProjectError):
            p.add_eval_set(bad, files["plain"])
    with pytest.raises(DataError) as exc:  # validated like forget data: nothing saved
        p.add_eval_set("raw", files["util"])
    assert exc.value.file == "my_authors.json" and "raw" not in p.eval_sets()
    p.remove_eval_set("trivia")
    assert set(p.eval_sets()) == {"my_authors"} and "trivia" not in p.meta["eval_sources"]
    assert p.default_probe_rows() == [4] and p.starred_rows() == [4]
    assert not p.is_demo


def test_create_project_with_sets_and_maps_is_all_or_nothing(tmp_path):
    files = tofu_files(tmp_path / "f")
    with pytest.raises(DataError):  # the set is not mapped: nothing is created
        create_project("x", files["forget"], files["retain"], root=tmp_path / "ws",
                       field_maps={"forget": MAP, "retain": RETAIN_MAP},
                       eval_sets={"my_authors": files["util"]})
    assert not (tmp_path / "ws" / "x").exists()
    p = create_project("x", files["forget"], files["retain"], root=tmp_path / "ws",
                       field_maps={"forget": MAP, "retain": RETAIN_MAP,
                                   "my_authors": RETAIN_MAP},
                       eval_sets={"my_authors": files["util"]})
    assert [i["role"] for i in p.eval_set_info()] == ["utility"]
    assert "eval:my_authors" in p.field_maps


def test_text_project_set_roles(tmp_path):
    from sga_core.assets import DEMO_DIR

    p = create_project("t", DEMO_DIR / "text_forget.jsonl", DEMO_DIR / "text_retain.jsonl",
                       root=tmp_path)
    assert p.add_eval_set("holdout", DEMO_DIR / "text_holdout.jsonl",
                          confirm_role=True)["role"] == "holdout"
    assert p.add_eval_set("forget_qa", DEMO_DIR / "text_forget_qa.jsonl",
                          confirm_role=True)["role"] == "forget_qa"
    with pytest.raises(DataError):  # holdout must be text
        p.add_eval_set("holdout", DEMO_DIR / "text_forget_qa.jsonl", replace=True,
                       confirm_role=True)


def test_demo_is_recognised_by_its_data(tmp_path):
    from sga_core.assets import DEMO_DIR
    from sga_core.projects import create_demo_project

    assert create_demo_project(root=tmp_path).is_demo
    copy = create_project("copy", DEMO_DIR / "forget.jsonl", root=tmp_path)
    assert copy.is_demo and copy.default_probe_rows() == [7, 8]


# --- Model Utility over user-named utility sets -----------------------------------------------


def test_model_utility_uses_every_utility_set_whatever_its_name():
    from sga_core.metrics.tofu import MODEL_UTILITY_METRICS, model_utility, utility_sets

    rows = [{"question": "q", "answer": "a", "perturbed_answer": ["b"]}]
    sets = {"forget": rows, "retain": rows, "my_authors": rows, "no_pert": [{"q": 1}],
            "empty": []}
    assert utility_sets(sets) == ["my_authors"]
    vals = {f"{s}_{m}": 0.5 for s in ("retain", "my_authors") for m in MODEL_UTILITY_METRICS}
    r = model_utility(vals, sets=("retain", "my_authors"))
    assert r.value == pytest.approx(0.5) and len(r.per_sample) == 6


@pytest.mark.slow
def test_evaluation_computes_mu_with_a_user_named_set(tmp_path, tiny_model_dir, demo_dir):
    from sga_core.evaluation import EvalSettings, evaluate_model
    from sga_core.fileio import read_jsonl

    fast = EvalSettings(max_new_tokens=4, max_retain_rows=4, batch_size=8)
    forget, retain = demo_dir / "forget.jsonl", demo_dir / "retain.jsonl"
    mine = read_jsonl(demo_dir / "real_authors.jsonl")[:4]
    with_set = evaluate_model(str(tiny_model_dir), tmp_path / "a", forget, retain,
                              {"my_authors": mine}, settings=fast)
    mu = with_set["metrics"]["model_utility"]
    assert mu["value"] is not None and len(mu["per_sample"]) == 6  # retain + my_authors
    none = evaluate_model(str(tiny_model_dir), tmp_path / "b", forget, retain, settings=fast)
    reason = none["metrics"]["model_utility"]["reason"]
    assert reason.startswith("no utility set") and "(real_authors, world_facts absent)" in reason
    assert "missing components" not in reason  # no components of sets the data never had
    plain = [{k: v for k, v in r.items() if k != "perturbed_answer"} for r in mine]
    flat = evaluate_model(str(tiny_model_dir), tmp_path / "c", forget, plain,
                          {"my_authors": mine}, settings=fast)
    reason = flat["metrics"]["model_utility"]["reason"]  # why each missing component is
    assert "retain_truth_ratio: no perturbed answers" in reason, reason


# --- results: collapse, labels, groups --------------------------------------------------------


def rows_with(**runs):
    from sga_core.report.collapse import mark_collapse

    rows = [{"run": name, "r": None, "method": "sga", **vals} for name, vals in runs.items()]
    return mark_collapse(rows, "qa")


def test_collapse_flag_against_the_original():
    from sga_core.report.collapse import collapse_rule
    from sga_core.report.ranking import best_values

    rows = rows_with(Original={"retain prob": 0.9, "retain ROUGE-L": 0.9},
                     ga={"retain prob": 2e-6, "retain ROUGE-L": 0.8, "forget ROUGE-L": 0.0},
                     half={"retain prob": 0.5, "retain ROUGE-L": 0.4, "forget ROUGE-L": 0.1},
                     fine={"retain prob": 0.5, "retain ROUGE-L": 0.8, "forget ROUGE-L": 0.3},
                     unknown={"forget ROUGE-L": 0.2})
    flags = {r["run"]: r.get("collapsed") for r in rows}
    assert flags == {"Original": None, "ga": True, "half": True, "fine": False,
                     "unknown": None}
    why = {r["run"]: r.get("collapsed (why)") for r in rows}
    assert "retain prob 2e-06 < 0.09" in why["ga"] and "retain ROUGE-L" in why["half"]
    assert why["unknown"] == "its retain metrics are missing"
    # best only among runs that did not collapse (unknown ones stay in)
    assert best_values(rows)["forget ROUGE-L"] == 0.2
    assert "retain prob below a tenth of the Original's" in collapse_rule("qa")
    no_original = rows_with(ga={"retain prob": 2e-6})
    assert no_original[0]["collapsed"] is None
    assert no_original[0]["collapsed (why)"] == "no evaluated Original to compare with"


def test_labels_and_groups_follow_the_settings_that_differ(tmp_path):
    from sga_core.report.sweeps import r_groups, sweep_series
    from sga_core.report.table import display_names, results_table

    files = tofu_files(tmp_path / "f")
    p = own_project(tmp_path / "ws", files)
    runs = tmp_path / "runs"
    for run_id, r, training in (("a", 0.0, {"max_steps": 20}), ("b", -0.8, {"max_steps": 20}),
                                ("c", 0.0, {"max_steps": 100}),
                                ("d", -0.8, {"max_steps": 100, "seed": 1}),
                                ("e", -0.8, {"max_steps": 100}),
                                ("f", 0.4, {"max_steps": 100, "lr": 2e-5})):
        fake_run(runs, p, run_id, r=r, training=training, metrics=metrics(fq=abs(r) + 0.1))
    rows = results_table(p, runs)
    names = {r["run_id"]: r["run"] for r in rows}
    assert names == {"a": "sga r=0 · 20 steps · lr 1e-05 · seed 0",
                     "b": "sga r=-0.8 · 20 steps · lr 1e-05 · seed 0",
                     "c": "sga r=0 · 100 steps · lr 1e-05 · seed 0",
                     "d": "sga r=-0.8 · 100 steps · lr 1e-05 · seed 1",
                     "e": "sga r=-0.8 · 100 steps · lr 1e-05 · seed 0",
                     "f": "sga r=0.4 · 100 steps · lr 2e-05 · seed 0"}
    # a group per setting of everything but r (and the seed: seeds are a configuration's
    # replicates) with two r values; named by what sets the groups apart (steps); d (seed 1)
    # joins e at r=-0.8, f (lr 2e-05) has no partner at another r
    groups = r_groups(rows)
    assert sorted(groups) == ["all sga runs · 100 steps", "all sga runs · 20 steps"]
    s = sweep_series(rows, "all sga runs · 100 steps")
    assert s["r"] == [-0.8, 0.0] and s["n"] == [2, 1] and s["FQ"] == [0.9, 0.1]
    from sga_core.runs.listing import list_runs

    same = [r for r in list_runs(runs) if r["run_id"] in ("a", "b")]
    assert set(display_names(same, p).values()) == {"sga r=0", "sga r=-0.8"}


# --- live: wrapping tokens, evaluation progress, chart names ----------------------------------


def test_token_lines_can_wrap():
    from ui.tokens import tokens_html

    out = tokens_html([" the", " French", " style"] * 50, [0.5] * 150, highlight="French")
    assert "&nbsp;" not in out and out.count("<wbr>") == 149
    assert "overflow-wrap:anywhere" in out and "white-space:pre-wrap" in out
    assert tokens_html(["<b>"], [1.0]).count("&lt;b&gt;") == 1


def stamp(seconds_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_evaluation_progress_and_eta(tmp_path):
    from sga_core.runs.folder import EVAL_REQUEST
    from sga_core.runs.progress import eval_progress, typical_eval_seconds
    from sga_core.runs.status import write_eval

    run = tmp_path / "run"
    run.mkdir()  # a status writer never creates the run folder itself
    assert eval_progress(run)["text"] == "not evaluated"
    write_eval(run, "running", pid=os.getpid(), started_at=stamp(30), stage="scoring answers",
               done=10, total=40, stage_started_at=stamp(20))
    ev = eval_progress(run)
    assert ev["text"] == "evaluating: scoring answers 10/40" and not ev["whole"]
    assert 55 <= ev["eta_s"] <= 66 and ev["fraction"] == 0.25  # 20 s for 10 rows, 30 left
    whole = eval_progress(run, typical_s=200)
    assert whole["whole"] and 163 <= whole["eta_s"] <= 171 and 0.14 < whole["fraction"] < 0.18
    write_eval(run, "completed", elapsed_s=90.0)
    assert eval_progress(run)["text"] == "evaluation completed"
    (run / EVAL_REQUEST).write_text("{}")
    assert eval_progress(run)["state"] == "queued"
    done = tmp_path / "done"
    (done / "eval").mkdir(parents=True)
    (done / "eval" / "summary.json").write_text(json.dumps({"metrics": {}, "elapsed_s": 120.0}))
    assert typical_eval_seconds([done, run]) == 120.0


def test_prepare_runs_name_their_curves():
    from sga_core.methods import get_method

    ft = get_method("finetune")
    assert ft.curve_names({"include_forget": False})["forget_nll"].startswith("retain NLL")
    assert "forget + retain" in ft.curve_names({"include_forget": True})["forget_nll"]
    assert get_method("sga").curve_names({}) == {}


# --- CLI --------------------------------------------------------------------------------------


def test_cli_map_and_project_commands(tmp_path, capsys, monkeypatch):
    from sga_core.cli import main
    from sga_core.projects import load_project

    files = tofu_files(tmp_path / "f")
    ws, runs = tmp_path / "ws", tmp_path / "runs"
    args = ["--forget", str(files["forget"]), "--retain", str(files["retain"])]
    assert main(["project", "create", "mine", *args, "--workspace", str(ws)]) == 2
    assert "--map FIELD=question" in capsys.readouterr().err
    assert main(["project", "create", "mine", *args, "--workspace", str(ws),
                 "--map", "prompt=question", "--map", "response=answer"]) == 0
    assert load_project("mine", ws).field_maps["forget"] == MAP
    assert main(["project", "add-set", "mine", "--workspace", str(ws), "--set",
                 f"my_authors={files['util']}", "--map", "prompt=question", "--map",
                 "response=answer", "--map", "perturbed_response=perturbed_answer"]) == 0
    assert "set my_authors: 5 rows, utility set" in capsys.readouterr().out
    assert main(["project", "create", "bad", *args, "--workspace", str(ws),
                 "--map", "prompt"]) == 2
    # train: the run's snapshot holds the renamed rows; the manifest keeps the mapping
    assert main(["train", "--forget", str(files["forget"]), "--map", "prompt=question",
                 "--map", "response=answer", "--runs-dir", str(runs), "--no-launch",
                 "--run-id", "mapped", "--max-steps", "1"]) == 0
    snap = load_dataset(runs / "mapped" / "data" / "forget.jsonl")
    assert snap.rows[0]["question"] == "Where was Ana Ruiz born?"
    manifest = json.loads((runs / "mapped" / "data" / "manifest.json").read_text())
    assert manifest["forget"]["field_map"] == MAP
    assert manifest["forget"]["rows_hash"] == load_project("mine", ws).forget_hash
    out = tmp_path / "normals.jsonl"
    assert main(["normals", "--forget", str(files["forget"]), "--map", "prompt=question",
                 "--map", "response=answer", "--out", str(out)]) == 0
    assert out.exists()


def test_config_refuses_a_bad_field_map(tmp_path):
    from sga_core.config import ConfigError, TrainConfig

    files = tofu_files(tmp_path)
    for bad in ("prompt=question", {"prompt": "questoin"}):
        with pytest.raises(ConfigError, match="data.field_map"):
            TrainConfig.from_dict({"method": "ga", "data": {"forget": str(files["forget"]),
                                                           "field_map": bad}}).validate()


@pytest.mark.slow
def test_own_data_end_to_end_gives_mu_in_every_row(tmp_path, tiny_model_dir):
    """Mapped TOFU-shaped files plus a utility set under the researcher's own name: prepare
    (tiny model), SGA at r = 0 and r = -0.8, each evaluated; every row of the table has MU,
    and no collapsed run is marked best."""
    from sga_core.normals.idk import idk_normals
    from sga_core.projects.training import build_config, default_eval
    from sga_core.report.ranking import best_values
    from sga_core.report.table import results_table
    from sga_core.runs.create import create_run
    from sga_core.runs.launch import run_foreground

    files = tofu_files(tmp_path / "f")
    project = own_project(tmp_path / "ws", files)
    project.add_eval_set("my_authors", files["util"], field_map={
        **MAP, "perturbed_response": "perturbed_answer"})
    project.save_normals(idk_normals(len(project.forget()), 4), "idk")
    runs = tmp_path / "runs"
    small = {"max_steps": 1, "batch_size": 4, "probe_count": 0, "eval_nll": False}
    fast = {"max_new_tokens": 4, "max_retain_rows": 4}

    def run(run_id, method, args, model):
        ev = {**default_eval(project, runs), **fast, "reference": str(runs / "mine-retain-ref")}
        cfg = build_config(project, method=method, method_args=args, training=small,
                           launch={}, model=model, run_id=run_id, eval_cfg=ev,
                           normals=str(project.normals_path) if method == "sga" else None)
        st = run_foreground(create_run(cfg, runs), echo=lambda m: None)
        assert st.get("eval_state") == "completed", st

    run("mine-retain-ref", "finetune", {"include_forget": False}, str(tiny_model_dir))
    run("mine-original", "finetune", {"include_forget": True}, str(tiny_model_dir))
    for r in (0.0, -0.8):
        run(f"sga-{str(r).replace('.', 'p').replace('-', 'm')}", "sga", {"r": r, "k": 4},
            str(runs / "mine-original" / "model"))
    rows = results_table(project, runs)
    assert [r["run"] for r in rows][:2] == ["Original", "Retained"] and len(rows) == 4
    assert all(r["MU"] is not None for r in rows), [(r["run"], r.get("MU (why)")) for r in rows]
    # judged, each: 4 retain rows (max_retain_rows) are too few to tell a collapse
    assert all(r.get("collapsed") is None and r["collapsed (why)"].startswith(
        "cannot tell: too few rows") for r in rows[2:]), [r.get("collapsed (why)") for r in rows]
    kept = [r for r in rows[2:] if not r["collapsed"]]
    for col, value in best_values(rows).items():  # every best value is a kept run's
        assert any(r[col] == value for r in kept), (col, value)
    # MU's components carry the names of the sets it was taken over (the retain set and the
    # researcher's own utility set), not TOFU's real_authors / world_facts
    parts = [k for k in rows[0] if k.startswith("MU: ")]
    assert parts == [f"MU: {s} {m}" for s in ("retain", "my_authors")
                     for m in ("prob", "ROUGE-L", "TR")], parts
    from sga_core.report.table import summary_of

    own = summary_of(runs / "mine-original")["metrics"]["my_authors_probability"]["value"]
    assert rows[0]["MU: my_authors prob"] == pytest.approx(own)
