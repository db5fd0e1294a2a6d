"""Results shows or hides each membership-inference attack's AUC and PrivLeak, each set's
prob_mean truth ratio and a multiple-choice set's accuracy: none at first, a "more columns"
choice of those the runs have, the chosen ones as columns (a run without one: "—"), the
choice kept across page switches and per project."""

from __future__ import annotations

import pytest

from sga_core.fileio import atomic_write_json, read_json
from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files
from tests.helpers.ui import open_page, results_cells, shown

pytestmark = pytest.mark.slow
KEY = "results.shown.mine"
EXTRA = {"mia_loss_auc": 0.7, "privleak_loss": -40.0, "mia_reference_auc": 0.6,
         "forget_truth_ratio_prob_mean": 0.55, "real_authors_truth_ratio_prob_mean": 0.8,
         "mia_gradnorm_auc": None, "mmlu_accuracy": 0.31}


@pytest.fixture()
def mine(ui_env):
    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    runs = ui_env / "runs"
    fake_run(runs, project, "sga-plain", r=0.4, metrics=metrics(fq=0.3))
    run = fake_run(runs, project, "sga-attacks", r=-0.8, metrics=metrics(fq=0.2))
    path = run / "eval" / "summary.json"
    summary = read_json(path)
    summary["metrics"].update({n: {"name": n, "value": v, "reason": None if v is not None
                                   else "GradNorm is off"} for n, v in EXTRA.items()})
    atomic_write_json(path, summary)
    return project


def test_each_attack_and_prob_mean_can_be_shown_and_hidden(mine):
    at = open_page("app_pages/results.py", "mine")
    choice = at.multiselect(key=KEY)
    assert choice.value == []
    assert set(choice.options) == {"MIA AUC (LOSS)", "PrivLeak (LOSS)", "MIA AUC (Reference)",
                                   "forget TR (prob_mean)", "real_authors TR (prob_mean)",
                                   "MIA AUC (GradNorm)", "MMLU acc"}
    cells = results_cells(at)
    assert "PrivLeak (LOSS)" not in cells["sga r=-0.8"]  # hidden at first
    choice.set_value(["PrivLeak (LOSS)", "real_authors TR (prob_mean)",
                      "MIA AUC (GradNorm)"]).run()
    assert not at.exception, at.exception
    cells = results_cells(at)
    row, plain = cells["sga r=-0.8"], cells["sga r=0.4"]
    assert row["PrivLeak (LOSS)"][0] == "-40"
    assert row["real_authors TR (prob_mean)"][0] == "0.8"
    assert row["MIA AUC (GradNorm)"][:2] == ["—", "GradNorm is off"]  # its reason on hover
    assert plain["PrivLeak (LOSS)"][0] == "—"  # a run without it, saying why on hover
    assert plain["PrivLeak (LOSS)"][1].startswith("not computed by this run's evaluation")
    # and counted and listed with the other values that could not be computed
    why = next(e for e in at.expander if "could not be computed: why" in e.label)
    listed = " ".join(shown(m.value) for m in why.markdown)
    assert "PrivLeak (LOSS)" in listed and "MIA AUC (GradNorm)" in listed, listed
    assert "MIA AUC (LOSS)" not in row
    # kept across a page switch
    at.switch_page("app_pages/data.py").run()
    at.switch_page("app_pages/results.py").run()
    assert not at.exception, at.exception
    assert at.multiselect(key=KEY).value == ["PrivLeak (LOSS)", "real_authors TR (prob_mean)",
                                             "MIA AUC (GradNorm)"]
    assert "PrivLeak (LOSS)" in results_cells(at)["sga r=-0.8"]
    at.multiselect(key=KEY).set_value([]).run()  # hidden again
    assert "PrivLeak (LOSS)" not in results_cells(at)["sga r=-0.8"]


def test_the_results_command_shows_them_when_asked(mine, ui_env, capsys):
    from sga_core.cli import main

    where = ["--project", "mine", "--workspace", str(ui_env / "workspace"), "--runs-dir",
             str(ui_env / "runs")]
    assert main(["results", *where]) == 0
    assert "PrivLeak (LOSS)" not in capsys.readouterr().out  # hidden at first, as on the page
    assert main(["results", *where, "--columns", "privleak_loss,forget TR (prob_mean)"]) == 0
    out = capsys.readouterr().out
    head = next(ln for ln in out.splitlines() if "PrivLeak (LOSS)" in ln)
    assert "forget TR (prob_mean)" in head and "MIA AUC (LOSS)" not in head
    row = next(ln for ln in out.splitlines() if ln.startswith("sga r=-0.8"))
    assert "-40" in row and "0.55" in row
    # MMLU as a utility set of a TOFU project: its accuracy (a column under WMDP's protocol
    # only) on request
    assert main(["results", *where, "--columns", "mmlu_accuracy"]) == 0
    out = capsys.readouterr().out
    assert "MMLU acc" in next(ln for ln in out.splitlines() if ln.startswith("run"))
    assert "0.31" in next(ln for ln in out.splitlines() if ln.startswith("sga r=-0.8"))
    assert main(["results", *where, "--columns", "all"]) == 0
    assert "MIA AUC (GradNorm)" in capsys.readouterr().out
    assert main(["results", *where, "--columns", "privleak_zlib"]) != 0
    assert "--columns privleak_zlib: not a column these runs have; they have: mia_loss_auc, " \
           "privleak_loss" in capsys.readouterr().err
