"""The Results page says when forgetting cannot be measured (docs/measurability.md): an
Original that scores like the Retained model on every forget-side metric gets a banner above
the table, and no value is marked best; an Original that memorised the forget set gets no
banner, and the best values are marked as usual. One verdict drives every surface: the
table, the r suggestion under Metrics versus r, and ``python -m sga_core results`` (the same
verdict line; ``*`` only where the page marks a best). Hand-built evaluations."""

from __future__ import annotations

import pytest

from sga_core.fileio import atomic_write_jsonl
from tests.helpers.cli import sga_cli
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


def cli_results(ui_env) -> str:
    res = sga_cli("results", "--project", "mine", "--workspace", str(ui_env / "workspace"),
                  "--runs-dir", str(ui_env / "runs"), cwd=ui_env)
    assert res.returncode == 0, res.stderr
    return res.stdout


def suggestions(at) -> list[str]:
    """The r suggestions under Metrics versus r (not the verdict above the table)."""
    texts = [shown(e.value) for e in [*at.info, *at.warning]]
    return [t for t in texts if "Forgetting can be measured" not in t and (
        " suggested" in t or "Best " in t or "No best" in t)]


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
    # the r suggestion follows the same verdict: no "Best FQ at r = ..." under the banner
    (text,) = suggestions(at)
    assert "Best " not in text and "No r is suggested" in text and BANNER in text
    # and so does the CLI: the same verdict, no value starred
    out = cli_results(ui_env)
    assert "verdict: Cannot measure forgetting." in out and BANNER in out
    table = out.split("verdict:", 1)[1]
    assert "*" not in table.replace("no value is marked best", ""), out
    assert "no value is marked best: forgetting cannot be measured here" in out


def test_an_original_that_memorised_shows_no_banner(ui_env):
    project_with(ui_env, [p + 0.5 for p in SPREAD])
    at = results()
    assert not any(BANNER in shown(e.value) for e in at.error)
    assert ("sga r=-0.8", "FQ") not in bold(results_cells(at))
    assert ("sga r=0.4", "FQ") in bold(results_cells(at))
    (text,) = suggestions(at)
    assert "Best FQ at r = 0.4" in text
    out = cli_results(ui_env)
    assert "verdict: Forgetting can be measured." in out and "decided by forget prob" in out
    assert "0.5*" in out  # FQ of sga r=0.4, starred as the page marks it


def test_a_metric_that_does_not_tell_the_two_apart_gets_no_best(ui_env):
    # measurable by forget prob; forget ROUGE-L is 0.5 on every row of both models, so it
    # cannot show forgetting: the runs' 0.25 and 0.3 are not ranked on any surface
    project_with(ui_env, [p + 0.5 for p in SPREAD])
    at = results()
    cells = results_cells(at)
    assert cells["sga r=-0.8"]["forget ROUGE-L"][0] == "0.25"  # shown, not marked
    assert [c for c in bold(cells) if c[1] == "forget ROUGE-L"] == []
    assert ("sga r=0.4", "FQ") in bold(cells)  # the rest is ranked as before
    verdicts = [shown(e.value) for e in at.info if "Forgetting can be measured" in
                shown(e.value)]
    assert any("Not on forget ROUGE-L" in v for v in verdicts), verdicts
    assert any("none on forget ROUGE-L" in shown(c.value) for c in at.caption)
    out = cli_results(ui_env)
    assert "Not on forget ROUGE-L" in out and "none on forget ROUGE-L" in out
    assert "0.25*" not in out and "0.3*" not in out


def test_a_panel_does_not_stretch_a_negligible_difference_to_the_full_axis():
    # VerbMem 0.10000 and 0.10007 at two r: a flat line on a 0.05-high scale, not a cliff;
    # a real spread keeps the plot's own scale
    from sga_core import workbench as wb
    from sga_core.report.stats import Interval
    from ui.intervals import panels

    tiny = [Interval(1, 0.1), Interval(1, 0.10007)]
    real = [Interval(1, 0.1), Interval(1, 0.4)]
    ppl = [Interval(1, 28.0), Interval(1, 28.001)]
    bands = {"r": [-0.8, 0.4], "VerbMem": tiny, "KnowMem forget": real, "PPL": ppl,
             "points": {"VerbMem": [(-0.8, 0.1, 0), (0.4, 0.10007, 0)],
                        "KnowMem forget": [(-0.8, 0.1, 0), (0.4, 0.4, 0)],
                        "PPL": [(-0.8, 28.0, 0), (0.4, 28.001, 0)]}}
    fig = panels(bands, ["VerbMem", "KnowMem forget", "PPL"], "r", None,
                 {"VerbMem": "forget_verbmem", "KnowMem forget": "forget_knowmem",
                  "PPL": "holdout_perplexity"})
    lo, hi = fig.layout.yaxis.range
    assert hi - lo >= 0.05 - 1e-12 and lo <= 0.1 and hi >= 0.10007
    assert fig.layout.yaxis2.range is None  # 0.3 apart: the plot's own scale
    lo, hi = fig.layout.yaxis3.range
    assert hi - lo >= 2.8  # 10% of a perplexity near 28
    assert wb.axis_range([0.5, 0.5], "forget_rouge") == [0.475, 0.525]
    assert wb.axis_range([None], "forget_rouge") is None


def test_intervals_too_wide_to_decide_say_not_enough_rows(ui_env):
    # two of ten rows far likelier under the Original: the interval [0, ~0.3] neither
    # separates the models nor rules memorisation out
    project_with(ui_env, [p + (0.9 if i < 2 else 0.0) for i, p in enumerate(SPREAD)])
    at = results()
    banners = [shown(e.value) for e in at.error]
    assert any("Cannot measure forgetting" in b and "Not enough rows to tell" in b and
               "forget prob" in b for b in banners), banners
    assert not any("has not memorised" in b for b in banners), banners
    assert bold(results_cells(at)) == []
    out = cli_results(ui_env)
    assert "Not enough rows to tell" in out and "has not memorised" not in out
