"""A run evaluated on a row subset (``eval.max_rows``) says so in the Results table itself:
each of its values is followed by "(n of N rows)", the rows that value was computed on of
the rows of its sets (Forget Quality: the forget set; Model Utility: retain and the two
utility sets), on the Results page and in ``results`` on the command line; a run evaluated on
every row shows its values alone."""

from __future__ import annotations

import shutil

import pytest

from sga_core.evaluation import evaluate_run
from tests.helpers.cli import sga_cli
from tests.helpers.own_data import fake_run
from tests.helpers.ui import open_page, results_cells

pytestmark = pytest.mark.slow
SUBSET, WHOLE = "sga r=-0.8", "sga r=0.4"


@pytest.fixture()
def evaluated(ui_env, tiny_model_dir, demo_dir):
    """The demo project with two runs of the tiny model really evaluated: one on 3 rows of
    every set, one on every row."""
    from sga_core.projects import create_demo_project

    project = create_demo_project(root=ui_env / "workspace")
    sets = {n: str(demo_dir / f"{n}.jsonl") for n in ("real_authors", "world_facts")}
    for run_id, r, limit in (("sga-few", -0.8, 3), ("sga-all", 0.4, 0)):
        run = fake_run(ui_env / "runs", project, run_id, r=r)
        shutil.copytree(tiny_model_dir, run / "model")
        evaluate_run(run, overrides={"max_rows": limit, "max_new_tokens": 2, "sets": sets,
                                     "max_retain_rows": 0})
    return project


def test_each_value_of_a_subset_evaluation_says_n_of_n_rows(evaluated):
    at = open_page("app_pages/results.py")
    cells = results_cells(at)
    few, whole = cells[SUBSET], cells[WHOLE]
    assert few["FQ"][0] == "—"  # no reference: nothing computed, no rows to tell
    assert few["forget ROUGE-L"][0].endswith(" (3 of 10 rows)"), few["forget ROUGE-L"]
    assert few["retain prob"][0].endswith(" (3 of 110 rows)"), few["retain prob"]
    # Model Utility: retain and the two utility sets (20 rows each)
    assert few["MU"][0].endswith(" (9 of 150 rows)"), few["MU"]
    assert all("rows" not in cell[0] for col, cell in whole.items() if col != "_style")
    assert any("(n of N rows)" in c.value for c in at.caption)  # the legend says what it is


def test_the_command_line_table_says_it_too(evaluated, ui_env):
    res = sga_cli("results", "--workspace", str(ui_env / "workspace"), "--runs-dir",
                  str(ui_env / "runs"), "--project", "demo")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    few = next(line for line in lines if line.startswith(SUBSET))
    whole = next(line for line in lines if line.startswith(WHOLE))
    assert "(3 of 10 rows)" in few and "(9 of 150 rows)" in few, few
    assert "rows)" not in whole, whole
