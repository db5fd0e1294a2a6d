"""The Results table as a trial read it: with a single run there is nothing to compare, so
no cell is marked best (every cell of the one run was bold green); a best is marked once two
runs differ; a long run name stays in its column (one line, cut with an ellipsis, the whole
name on hover) instead of running into the method column."""

from __future__ import annotations

import pytest

from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files
from tests.helpers.ui import open_page, results_cells

pytestmark = pytest.mark.slow


@pytest.fixture()
def mine(ui_env):
    from sga_core.projects import create_demo_project

    create_demo_project(root=ui_env / "workspace")
    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    runs = ui_env / "runs"
    fake_run(runs, project, "mine-original", method="finetune", metrics=metrics(fq=0.002))
    fake_run(runs, project, "mine-retain-ref", method="finetune", include_forget=False,
             metrics=metrics(fq=1.0))
    fake_run(runs, project, "sga-one", r=-0.8, metrics=metrics(fq=0.2, f_rouge=0.25))
    return project


def results(project_name: str = "mine"):
    at = open_page("app_pages/results.py")
    at.selectbox(key="_project_picker").set_value(project_name).run()
    assert not at.exception, at.exception
    return at


def bold(cells: dict) -> list[tuple[str, str]]:
    return [(run, col) for run, row in cells.items() for col, cell in row.items()
            if col != "_style" and "bold" in cell[2] and col != "collapsed"]


def test_one_run_has_no_best_two_runs_do(mine):
    cells = results_cells(results())
    assert len(cells) == 3  # Original, Retained, the one run
    assert bold(cells) == []
    fake_run(mine.path.parent.parent / "runs", mine, "sga-two", r=0.4,
             metrics=metrics(fq=0.5, f_rouge=0.25))
    cells = results_cells(results())
    marked = dict(bold(cells))
    assert "FQ" in marked.values() and "forget ROUGE-L" not in marked.values()  # a tie
    (best_fq,) = [run for run, col in bold(cells) if col == "FQ"]
    assert cells[best_fq]["FQ"][0] == "0.5"


def test_run_names_stay_in_their_column_with_the_whole_name_on_hover(mine):
    runs = mine.path.parent.parent / "runs"
    for i, lr in enumerate((1e-5, 2e-6, 3e-7)):  # names carry their differing settings
        fake_run(runs, mine, f"sga-lr{i}", r=-0.8, metrics=metrics(fq=0.1 * i),
                 training={"lr": lr, "max_steps": 10 + i, "batch_size": 2 + i})
    cells = results_cells(results())
    names = [run for run in cells if "lr" in run]
    assert len(names) == 4 and max(map(len, names)) > 40, names  # with the first run
    for run, row in cells.items():
        text, title, style = row["run"]
        assert text == run and title == run
        assert "text-overflow:ellipsis" in style and "white-space:nowrap" in style
        assert "max-width" in style and "padding" in style
