"""Published models instead of Prepare (docs/guide/published-models.md): a tiny model saved
to a folder serves as a project's Original and Retained model without any prepare run, a run
unlearns the Original and is evaluated against the Retained model; then the Retained
model's OU-shaped eval log (tests/helpers/ou_logs.py, written as open-unlearning writes
TOFU_EVAL.json, from that model's own NLLs) as the reference gives the same Forget Quality;
and ``project create`` / ``set-models`` / ``show`` from the shell say which is in use."""

from __future__ import annotations

import shutil

import pytest

from sga_core.config import ConfigError, load_config
from sga_core.data import load_qa, write_dataset
from sga_core.evaluation import EvalSettings, evaluate_model, evaluate_run
from sga_core.fileio import read_json, read_jsonl
from sga_core.projects import ProjectError, create_project
from sga_core.projects.published import in_use_lines, models_in_use, set_published
from sga_core.projects.training import build_config, default_eval, prepared_model
from tests.helpers import ou_logs as ou
from tests.helpers.cli import sga_cli
from tests.helpers.stress import runner_lock

TRAINING = {"batch_size": 3, "max_steps": 1, "lr": 1e-3, "probe_count": 0, "probe_every": 0,
            "eval_nll": False}


@pytest.fixture()
def project(tmp_path, demo_dir):
    data = {name: write_dataset(tmp_path / f"{name}.jsonl",
                                load_qa(demo_dir / f"{name}.jsonl")[:n])
            for name, n in (("forget", 3), ("retain", 4))}
    return create_project("pub", data["forget"], data["retain"], root=tmp_path / "ws")


def retain_log(retained, project, folder) -> tuple:
    """The Retained model's TOFU_EVAL.json, as OU writes it from the model's per-row
    NLLs of the paraphrased and perturbed answers."""
    ev = evaluate_model(str(retained), folder / "own-eval", str(project.forget_path),
                        settings=EvalSettings(max_new_tokens=4, batch_size=16))
    rows = [r for r in read_jsonl(folder / "own-eval" / "per_sample.jsonl")
            if r["set"] == "forget"]
    logs = ou.tofu_logs(project.forget(), [r["nll_paraphrased"] for r in rows],
                        [r["nll_perturbed"] for r in rows])
    eval_file, _ = ou.write_ou_logs(folder / "tofu_tiny_retain", "TOFU", logs,
                                    ["forget_quality", "forget_truth_ratio"])
    return eval_file, ev


def test_published_models_replace_prepare(project, tiny_model_dir, tmp_path):
    from sga_core.runs.create import create_run
    from sga_core.runs.launch import run_foreground

    runs = tmp_path / "runs"
    # the session's tiny model may carry other tests' reference caches (eval/): leave them
    retained = shutil.copytree(tiny_model_dir, tmp_path / "published" / "retain",
                               ignore=shutil.ignore_patterns("eval"))
    set_published(project, original=str(tiny_model_dir), retained=str(retained))
    original = prepared_model(project, runs)
    assert original == tiny_model_dir.resolve()
    used = models_in_use(project, runs)
    assert [used[r]["source"] for r in ("original", "retained", "reference")] == \
        ["folder"] * 3
    ev_cfg = default_eval(project, runs)
    assert ev_cfg["reference"] == str(retained)
    cfg = build_config(project, method="ga", method_args={}, training=TRAINING, launch={},
                       model=str(original), run_id="pub-ga",
                       eval_cfg={**ev_cfg, "max_new_tokens": 6})
    run_dir = create_run(cfg, runs)
    status = run_foreground(run_dir, echo=lambda line: None, poll_s=0.2)
    assert status["state"] == "completed" and status["eval_state"] == "completed", status
    assert sorted(p.name for p in runs.iterdir()) == ["pub-ga"]  # no prepare run
    summary = evaluate_run(run_dir)  # as the run's own evaluation did
    fq = summary["metrics"]["forget_quality"]
    assert fq["value"] is not None and summary["reference"]["model"] == str(retained)

    # the same Retained model's published eval log as the reference: the same values
    # (those computed from the model, cached beside it), the same FQ
    log, own = retain_log(retained, project, tmp_path)
    from sga_core.evaluation.ou_logs import read_logs, truth_ratios

    (computed,) = read_json(retained / "eval" / "reference_cache.json")["entries"].values()
    from_file = truth_ratios(read_logs(log), project.forget())
    assert from_file == pytest.approx(computed["value"], rel=1e-6)
    print("max diff: truth ratios log vs model",
          max(abs(a - b) for a, b in zip(from_file, computed["value"])))
    set_published(project, reference_logs=str(log))
    assert models_in_use(project, runs)["reference"]["source"] == "eval log"
    ref = default_eval(project, runs)["reference"]
    assert ref == str(log)
    from_log = evaluate_run(run_dir, overrides={"reference": ref}, out_dir=tmp_path / "e2")
    assert from_log["reference"]["source"] == "published eval log (TOFU_EVAL.json)"
    assert from_log["reference"]["n_truth_ratios"] == 3
    assert from_log["metrics"]["forget_quality"]["value"] == pytest.approx(fq["value"],
                                                                          abs=1e-9)
    assert own["forget_truth_ratios"] == pytest.approx(
        [v["score"] for v in ou.tofu_logs(project.forget(), *nlls_of(tmp_path))
         ["forget_truth_ratio"]["value_by_index"].values()], rel=1e-6)
    # a log of other rows is refused when it is named, and nothing changes
    wrong = ou.save_logs(ou.tofu_logs(project.forget()[::-1], *nlls_of(tmp_path)),
                         tmp_path / "wrong" / "TOFU_EVAL.json")
    with pytest.raises(ProjectError, match="row 0's answer .* other rows"):
        set_published(project, reference_logs=str(wrong))
    assert default_eval(project, runs)["reference"] == str(log)
    # unset: Prepare's again (none yet)
    set_published(project, original="prepared", retained="", reference_logs="prepared")
    assert prepared_model(project, runs) is None and default_eval(project, runs)["reference"] \
        is None
    assert in_use_lines(project, runs)[0].startswith("Original: none yet")


def nlls_of(folder) -> tuple[list, list]:
    rows = [r for r in read_jsonl(folder / "own-eval" / "per_sample.jsonl")
            if r["set"] == "forget"]
    return [r["nll_paraphrased"] for r in rows], [r["nll_perturbed"] for r in rows]


def test_project_commands_name_and_show_published_models(project, tiny_model_dir, tmp_path,
                                                         monkeypatch):
    ws = str(tmp_path / "ws")
    env = {"HF_HUB_CACHE": str(tmp_path / "hub")}
    bad = sga_cli("project", "create", "other", "--forget", str(project.forget_path),
                  "--workspace", ws, "--original", "org/not-cached", env=env)
    assert bad.returncode != 0 and "not in the local Hugging Face cache" in bad.stderr
    assert "nothing was written" in bad.stderr and not (tmp_path / "ws" / "other").exists()
    same = sga_cli("project", "create", "other", "--forget", str(project.forget_path),
                   "--workspace", ws, "--original", str(tiny_model_dir), "--retained",
                   str(tiny_model_dir), env=env)  # FQ would compare the model with itself
    assert same.returncode != 0 and "are the same model" in same.stderr
    assert "nothing was written" in same.stderr and not (tmp_path / "ws" / "other").exists()
    retained = shutil.copytree(tiny_model_dir, tmp_path / "retained")
    ok = sga_cli("project", "create", "other", "--forget", str(project.forget_path),
                 "--workspace", ws, "--original", str(tiny_model_dir), "--retained",
                 str(retained), env=env)
    assert ok.returncode == 0, ok.stderr
    assert f"Original: published checkpoint (folder): {tiny_model_dir}" in ok.stdout
    assert f"Reference (Forget Quality, PrivLeak): published checkpoint (folder): " \
           f"{retained}" in ok.stdout
    muse = ou.save_logs({"forget_knowmem_ROUGE": {"agg_value": 0.1, "value_by_index": {}}},
                        tmp_path / "m" / "MUSE_EVAL.json")
    refused = sga_cli("project", "set-models", "other", "--workspace", ws,
                      "--reference-logs", str(muse), env=env)
    assert refused.returncode != 0
    assert "MUSE's evaluation log, and this is a QA (TOFU) project" in refused.stderr
    shown = sga_cli("project", "show", "other", "--workspace", ws, env=env)
    assert "Reference (Forget Quality, PrivLeak): published checkpoint" in shown.stdout
    assert "published Original: not evaluated yet" in shown.stdout, shown.stdout
    # their evaluation from the shell (held in the queue here: no runner takes it)
    runs = tmp_path / "runs"
    env["SGA_RUNS_DIR"] = str(runs)
    with runner_lock(runs):
        queued = sga_cli("project", "evaluate-published", "other", "--workspace", ws,
                         "--max-rows", "2", env=env)
        assert queued.returncode == 0, queued.stderr
        assert queued.stdout.index("queued the evaluation of other-published-retained") < \
            queued.stdout.index("queued the evaluation of other-published-original")
        shown = sga_cli("project", "show", "other", "--workspace", ws, env=env)
    assert "published Original: evaluation queued (other-published-original)" in shown.stdout, \
        shown.stdout
    assert load_config(runs / "other-published-original" / "config.yaml").eval.max_rows == 2
    none = sga_cli("project", "evaluate-published", "pub", "--workspace", ws, env=env)
    assert none.returncode != 0 and "names no published Original or Retained" in none.stderr


def test_a_muse_log_gives_the_text_reference_auc(tmp_path, tiny_model_dir, demo_dir):
    """A text project: the Retained model's MUSE_EVAL.json (OU's mia_min_k of the model's
    own token log-probs) as the reference gives the PrivLeak that the model itself gives;
    a row limit takes the log's scores of those rows."""
    from sga_core.data import load_text
    from sga_core.evaluation.inputs import text_token_logprobs
    from sga_core.evaluation.run import load_model_and_tokenizer
    from sga_core.evaluation.text import full_text

    rows = {n: load_text(demo_dir / f"text_{n}.jsonl")[:k]
            for n, k in (("forget", 4), ("holdout", 4))}
    files = {n: write_dataset(tmp_path / f"{n}.jsonl", r) for n, r in rows.items()}
    project = create_project("news", files["forget"], root=tmp_path / "ws",
                             eval_sets={"holdout": files["holdout"]},
                             confirm_roles=True)
    retained = shutil.copytree(tiny_model_dir, tmp_path / "retrain")
    st = EvalSettings(max_new_tokens=4, batch_size=16)
    _, resolved, _ = st.resolve()
    model, tok = load_model_and_tokenizer(str(retained))
    lps = {n: text_token_logprobs(model, resolved.encoder(tok, model),
                                  [full_text(r) for r in rows[n]]) for n in rows}
    mia = ou.mia_min_k(lps["forget"], lps["holdout"])
    log, _ = ou.write_ou_logs(tmp_path / "muse_retrain", "MUSE",
                              {"mia_min_k": mia, "privleak": ou.privleak(mia["auc"], None),
                               "forget_verbmem_ROUGE": {"agg_value": 0.0,
                                                        "value_by_index": {}}},
                              ["privleak", "forget_verbmem_ROUGE"])
    set_published(project, reference_logs=str(log.parent))
    assert models_in_use(project)["reference"]["source"] == "eval log"
    data = (str(files["forget"]), None, {"holdout": str(files["holdout"])})
    by_model = evaluate_model(str(tiny_model_dir), tmp_path / "a", *data,
                              reference=str(retained), settings=st)
    by_log = evaluate_model(str(tiny_model_dir), tmp_path / "b", *data,
                            reference=str(log.parent), settings=st)
    assert by_log["reference"]["source"] == "published eval log (MUSE_EVAL.json)"
    assert by_log["reference"]["mia_auc"] == pytest.approx(by_model["reference"]["mia_auc"],
                                                           abs=1e-9)
    assert by_log["metrics"]["privleak"]["value"] == pytest.approx(
        by_model["metrics"]["privleak"]["value"], abs=1e-6)
    print("max diff: AUC log vs model", abs(by_log["reference"]["mia_auc"]
                                            - by_model["reference"]["mia_auc"]),
          "privleak", abs(by_log["metrics"]["privleak"]["value"]
                          - by_model["metrics"]["privleak"]["value"]))
    limited = EvalSettings(max_new_tokens=4, batch_size=16, max_rows=2)
    sub_model = evaluate_model(str(tiny_model_dir), tmp_path / "c", *data,
                               reference=str(retained), settings=limited)
    sub_log = evaluate_model(str(tiny_model_dir), tmp_path / "d", *data,
                             reference=str(log), settings=limited)
    assert sub_log["reference"]["mia_auc"] == pytest.approx(
        sub_model["reference"]["mia_auc"], abs=1e-9)


def test_published_models_evaluated_are_the_results_reference_rows(project, tiny_model_dir,
                                                                    tmp_path):
    """Evaluating the published models makes run folders that link to them (nothing copied,
    nothing trained), queued on the real runner: they become the Original and Retained rows
    of Results, so an unlearning run's collapse flag compares with the Original. A row is
    the model the project names now: naming another one leaves the old evaluation out."""
    from sga_core.model.tiny import build_tiny_model
    from sga_core.projects.published_eval import (
        evaluate_published,
        evaluation_state,
        reference_rows,
    )
    from sga_core.report.table import display_names, project_runs, results_table
    from sga_core.runs import queue
    from sga_core.runs.create import create_run
    from sga_core.runs.launch import run_foreground
    from sga_core.runs.status import effective_eval
    from tests.helpers.wait import wait_for

    runs = tmp_path / "runs"
    original = shutil.copytree(tiny_model_dir, tmp_path / "published" / "full",
                               ignore=shutil.ignore_patterns("eval"))
    retained = build_tiny_model(tmp_path / "published" / "retain90", seed=1)
    with pytest.raises(ConfigError, match="names no published Original or Retained"):
        evaluate_published(project, runs)
    set_published(project, original=str(original), retained=str(retained))
    assert evaluation_state(project, "original", runs).startswith("not evaluated yet")
    cfg = build_config(project, method="ga", method_args={}, training=TRAINING, launch={},
                       model=str(original), run_id="pub-ga",
                       eval_cfg={**default_eval(project, runs), "max_new_tokens": 4})
    run_foreground(create_run(cfg, runs), echo=lambda line: None, poll_s=0.2)
    (ga,) = results_table(project, runs)
    assert ga["collapsed (why)"] == "no evaluated Original to compare with"

    dirs = evaluate_published(project, runs)
    assert [d.name for d in dirs] == ["pub-published-retained", "pub-published-original"]
    for d, model in zip(dirs, (retained, original)):
        assert (d / "model").is_symlink() and (d / "model").resolve() == model.resolve()
        assert "python -m sga_core eval" in (d / "command.sh").read_text()

    def ended():
        states = [effective_eval(d).get("state") for d in dirs]
        return states if all(s in ("completed", "failed", "cancelled") for s in states) \
            else None

    states = wait_for(ended, 600, lambda: f"evaluations: {[effective_eval(d) for d in dirs]}")
    assert states == ["completed", "completed"], [effective_eval(d) for d in dirs]
    assert reference_rows(project, runs) == {"pub-published-original": "Original",
                                             "pub-published-retained": "Retained"}
    assert evaluation_state(project, "original", runs) == \
        "evaluated: Results' Original row (pub-published-original)"
    rows = {r["run"]: r for r in results_table(project, runs)}
    assert list(rows) == ["Original", "Retained", "ga"], list(rows)
    summary = {n: read_json(d / "eval" / "summary.json") for n, d in zip(("R", "O"), dirs)}
    assert summary["O"]["reference"]["model"] == str(retained)  # FQ against the Retained
    assert summary["R"]["reference"]["source"].startswith("self")
    assert rows["ga"]["collapsed (why)"] != "no evaluated Original to compare with"
    assert "the Original's" in rows["ga"]["collapsed (why)"], rows["ga"]
    with pytest.raises(ValueError, match="evaluation of a published model: nothing was "
                                         "trained"):
        queue.rerun(dirs[1], runs)

    # another Original named: the old evaluation is no row until the new one is evaluated
    other = build_tiny_model(tmp_path / "published" / "other", seed=2)
    set_published(project, original=str(other))
    assert "Original" not in {r["run"] for r in results_table(project, runs)}
    names = display_names(project_runs(project, runs), project)
    assert names["pub-published-original"] == "Original (published, not in use)"
    assert evaluation_state(project, "original", runs).startswith("not evaluated yet")
    queue.delete(dirs[1])  # the folder goes; the published model it linked to stays
    assert not dirs[1].exists() and (original / "config.json").exists()
