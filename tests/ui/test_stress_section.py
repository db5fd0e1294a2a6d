"""The Results page's "Does it hold?" section: one row per stress-tested run, one column per
attack, the recovery coloured by band with its interval on hover; a collapsed run greyed
and uncoloured; before any stress test, a line saying how to run one."""

from __future__ import annotations

import pytest

from sga_core.fileio import atomic_write_json
from sga_core.runs.folder import STRESS_DIR
from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files
from tests.helpers.ui import open_page

pytestmark = pytest.mark.slow


def _stress(run_dir, key, mean, lo=None, hi=None, values=None, cases=()):
    """A result file; ``values``: (unlearned, attacked, original) forget probabilities."""
    head = {"recovery": {"n": 3 if lo is not None else 1, "mean": mean, "lo": lo, "hi": hi}}
    if values:
        head.update(unlearned=values[0], attacked={"mean": values[1]}, original=values[2])
    atomic_write_json(run_dir / STRESS_DIR / f"{key}.json", {
        "attack": key, "recovery_reason": None if mean is not None else "gap ~0: nothing",
        "summary": {"probability": head}, "cases": list(cases)})


def _page():
    at = open_page("app_pages/results.py")
    at.selectbox(key="_project_picker").set_value("mine").run()
    assert not at.exception, at.exception
    return at


def test_does_it_hold_table(ui_env):
    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    runs = ui_env / "runs"
    fake_run(runs, project, "mine-original", method="finetune", metrics=metrics(fq=0.002))
    sga = fake_run(runs, project, "sga-one", r=-0.8, metrics=metrics(fq=0.2))
    at = _page()
    assert "Does it hold?" in [s.value for s in at.subheader]
    assert any("No stress tests yet" in c.value for c in at.caption)

    _stress(sga, "quant4", 0.9)
    _stress(sga, "relearn-10", 0.1, -0.05, 0.25)
    _stress(sga, "paraphrase", -1.39, values=(0.115, 0.094, 0.130), cases=[{"info": {
        "from_data": 0, "generated": 8, "paraphraser": "local: embedded:smollm2",
        "left_out": {"7": "the paraphraser repeated the question"}}}])
    _stress(sga, "fewshot", None)
    at = _page()
    assert any("below 0 the attack moved the model further" in c.value for c in at.caption)
    table = next(h.proto.body for h in at.html if "data-band" in h.proto.body)
    assert table.index('data-col="relearn-10"') < table.index('data-col="quant4"')
    assert 'data-band="back"' in table and 'data-band="held"' in table
    assert 'data-band="undefined"' in table and "gap ~0: nothing" in table
    assert "0.10 [-0.05, 0.25] (3 cases)" in table  # the interval on hover
    # and what a recovery is made of: a small gap is said to be noisy, below 0 explained,
    # the paraphrases' source and what was left out
    import html

    para = html.unescape(table.split('data-col="paraphrase"')[1].split("</td>")[0])
    assert "unlearned 0.115 -> attacked 0.094, Original 0.130 (gap 0.015, small: the " \
        "recovery is noisy)" in para
    assert "below 0: the attack moved the model further from the Original" in para
    assert "0 paraphrases from the data, 8 written by local: embedded:smollm2, 1 left out " \
        "(e.g. the paraphraser repeated the question)" in para
    assert "#ffc9c9" in table and "#d8f3dc" in table


def test_a_collapsed_run_is_greyed_and_not_coloured():
    from ui.stress_table import table_html

    rows = [{"run": "broken", "collapsed": True, "quant4": 0.0, "quant4 (text)": "0.00"},
            {"run": "fine", "collapsed": False, "quant4": 0.0, "quant4 (text)": "0.00"}]
    html = table_html(rows, ["quant4"])
    broken, fine = html.split('data-run="fine"')
    assert "color:#888" in broken and "#d8f3dc" not in broken and ">collapsed<" in broken
    assert "#d8f3dc" in fine
