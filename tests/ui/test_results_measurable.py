"""The Results page says when forgetting cannot be measured (docs/measurability.md): an
Original that scores like the Retained model on every forget-side metric gets a banner above
the table, and no value is marked best; an Original that memorised the forget set gets no
banner, and the best values are marked as usual. Hand-built evaluations."""

from __future__ import annotations

import pytest

from sga_core.fileio import atomic_write_jsonl
from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files
from tests.helpers.ui import open_page, results_cells, shown

pytestmark = pytest.mark.slow

SPREAD = [0.1, 0.3, 0.2, 0.5, 0.4, 0.15, 0.35, 0.25, 0.45, 0.05]
BANNER = "no forgetting can be measured; train the Original longer, or check the sets"


def rows(run_dir, probs):
    atomic_write_jsonl(run_dir / "eval" / "per_sample.jsonl", [
        {"set": "forget", "index": i, "question": f"q{i}", "answer": "a", "generated": "g",
         "probability": p, "rouge_l_recall": 0.5} for i, p in enumerate(probs)])


def project_with(ui_env, original_probs):
    """An own project, its Original (forget probabilities ``original_probs``), its Retained
    (``SPREAD``) and two unlearning runs whose values differ (so a best would be marked)."""
    from sga_core.projects import create_demo_project

    create_demo_project(root=ui_env / "workspace")
    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    runs = ui_env / "runs"
    mean = sum(original_probs) / len(original_probs)
    o = fake_run(runs, project, "mine-original", method="finetune",
                 metrics=metrics(fq=0.002, f_prob=mean))
    r = fake_run(runs, project, "mine-retain-ref", method="finetune", include_forget=False,
                 metrics=metrics(fq=1.0, f_prob=sum(SPREAD) / 10))
    rows(o, original_probs)
    rows(r, SPREAD)
    fake_run(runs, project, "sga-one", r=-0.8, metrics=metrics(fq=0.2, f_rouge=0.25))
    fake_run(runs, project, "sga-two", r=0.4, metrics=metrics(fq=0.5, f_rouge=0.3))
    return project


def results():
    at = open_page("app_pages/results.py")
    at.selectbox(key="_project_picker").set_value("mine").run()
    assert not at.exception, at.exception
    return at


def bold(cells: dict) -> list:
    return [(run, col) for run, row in cells.items() for col, cell in row.items()
            if col not in ("_style", "collapsed") and "bold" in cell[2]]


def test_an_original_like_the_retained_shows_the_banner_and_ranks_nothing(ui_env):
    project_with(ui_env, SPREAD)
    at = results()
    banners = [shown(e.value) for e in at.error]
    assert any(BANNER in b and "Cannot measure forgetting" in b for b in banners), banners
    assert bold(results_cells(at)) == []
    assert any("No value is marked best" in shown(c.value) for c in at.caption)
    (cmp,) = [d.value for d in at.dataframe if "tells them apart" in d.value.columns]
    assert set(cmp["tells them apart"]) == {"no"} and len(cmp) == 2


def test_an_original_that_memorised_shows_no_banner(ui_env):
    project_with(ui_env, [p + 0.5 for p in SPREAD])
    at = results()
    assert not any(BANNER in shown(e.value) for e in at.error)
    assert ("sga r=-0.8", "FQ") not in bold(results_cells(at))
    assert ("sga r=0.4", "FQ") in bold(results_cells(at))
