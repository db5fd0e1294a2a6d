"""A value that does not mean what its column says is flagged, explained, and not ranked:
PrivLeak where the Retained model, which saw neither set, tells the forget texts from the
holdout texts apart (a new user's MUSE-Books study showed PrivLeak 0 for every run, each
with a Min-K% AUC of 0: the sets differed in kind, and nothing said so)."""

from __future__ import annotations

from sga_core.cli.report import results_lines
from sga_core.metrics.catalog import TEXT
from sga_core.report.ranking import best_values
from sga_core.report.table import value_note


def summary(auc, ref=None):
    return {"metrics": {"mia_auc": {"name": "mia_auc", "value": auc}},
            "reference": {} if ref is None else {"mia_auc": ref}}


def test_privleak_is_cautioned_where_the_retained_separates_the_sets():
    assert value_note(summary(0.9, ref=0.55), "privleak", retained=False) is None
    note = value_note(summary(0.0, ref=0.0), "privleak", retained=False)
    assert "Min-K% AUC is 0.00" in note and "not memorisation" in note
    assert value_note(summary(0.5, ref=0.95), "privleak", retained=False)
    # the Retained's own AUC is the reference
    assert value_note(summary(0.02), "privleak", retained=True)
    assert value_note(summary(0.5), "privleak", retained=True) is None
    assert value_note(summary(0.0, ref=0.0), "forget_verbmem", retained=False) is None
    assert value_note(summary(0.0), "privleak", retained=False) is None  # no reference


def rows():
    note = value_note(summary(0.0, ref=0.0), "privleak", retained=False)
    return [{"run": "Retained", "run_id": "p-retain-ref", "PrivLeak": 0.0,
             "PrivLeak (note)": note},
            {"run": "sga", "run_id": "sga", "method": "sga", "r": -0.8, "K": 4, "collapsed": False,
             "PrivLeak": 0.0, "PrivLeak (note)": note, "VerbMem": 0.1},
            {"run": "ga", "run_id": "ga", "method": "ga", "r": None, "K": None, "collapsed": False,
             "PrivLeak": 40.0, "VerbMem": 0.3}]


def test_a_cautioned_value_is_not_ranked_and_the_cli_says_why():
    # sga's PrivLeak 0 would beat ga's 40 by 40 points, but it measures the sets' difference
    assert "PrivLeak" not in best_values(rows(), TEXT)
    lines = results_lines(rows(), TEXT)
    sga = next(line for line in lines if line.startswith("sga"))
    assert "0!" in sga.replace(" ", "")
    assert any(line.startswith("note sga: PrivLeak: the Retained model, which saw neither set")
               for line in lines)
    assert any("! = the value does not mean what its column says" in line for line in lines)


def test_the_results_page_marks_it_with_its_reason_on_hover():
    from sga_core.report.columns import row_columns
    from ui.results_table import table_html

    html = table_html(rows(), row_columns(rows(), TEXT), TEXT)
    cell = html.split('data-col="PrivLeak" title="', 2)[1]
    assert cell.startswith("the Retained model, which saw neither set")
    assert "0 ⚠</td>" in cell
