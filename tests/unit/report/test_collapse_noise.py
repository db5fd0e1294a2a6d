"""The collapse rule does not fire on noise (docs/decisions/005-collapse-rule.md): a MUSE-Books
study flagged GA "collapsed" on KnowMem retain 0.0182 < 0.0186 (half of the Original's 0.0372)
over 5 questions, a rule the Retained model (0) would fail as well. Where the Original's own
value is too small, or the rows behind either value too few, the flag says "cannot tell"
instead. Real summary.json files under run folders, read by the Results table."""

from __future__ import annotations

from sga_core.fileio import atomic_write_json
from sga_core.report.collapse import mark_collapse
from tests.helpers.own_data import fake_run


def text_summary(run_dir, knowmem: float, ppl: float, questions: int, holdout: int = 40):
    atomic_write_json(run_dir / "eval" / "summary.json", {
        "task": "text", "rows": {"forget": 40, "holdout": holdout, "retain_qa": questions},
        "metrics": {k: {"name": k, "value": v, "reason": None} for k, v in
                    {"retain_knowmem": knowmem, "holdout_perplexity": ppl}.items()}})


def table(tmp_path, demo_dir, original: float, ga: float, questions: int) -> dict:
    from sga_core.projects import create_project
    from sga_core.report.table import results_table

    project = create_project("books", demo_dir / "text_forget.jsonl",
                             demo_dir / "text_retain.jsonl", kind="text",
                             root=tmp_path / "workspace")
    runs = tmp_path / "runs"
    for run_id, method, knowmem, extra in (("books-original", "finetune", original, {}),
                                           ("books-retain-ref", "finetune", 0.0,
                                            {"include_forget": False}),
                                           ("books-ga", "ga", ga, {})):
        run_dir = fake_run(runs, project, run_id, method=method, **extra)
        text_summary(run_dir, knowmem, 30.0, questions)
    return {r["run_id"]: r for r in results_table(project, runs, "text")}


def test_ga_on_5_questions_of_a_tiny_knowmem_is_not_flagged(tmp_path, demo_dir):
    ga = table(tmp_path, demo_dir, 0.0372, 0.0182, 5)["books-ga"]
    assert ga["collapsed"] is None, ga["collapsed (why)"]
    why = ga["collapsed (why)"]
    assert why.startswith("cannot tell: too few rows") and "over 5 rows" in why, why
    assert "KnowMem retain 0.0182 vs the Original's 0.0372" in why


def test_a_tiny_original_value_cannot_tell_even_over_many_rows(tmp_path, demo_dir):
    ga = table(tmp_path, demo_dir, 0.0372, 0.0182, 100)["books-ga"]
    assert ga["collapsed"] is None
    assert "cannot tell: the Original's KnowMem retain 0.0372 is below 0.1" in \
        ga["collapsed (why)"]
    assert "kept: PPL 30 vs the Original's 30" in ga["collapsed (why)"]  # the other rule held


def test_a_real_collapse_over_enough_rows_is_still_flagged(tmp_path, demo_dir):
    ga = table(tmp_path, demo_dir, 0.4, 0.05, 10)["books-ga"]
    assert ga["collapsed"] is True
    assert ga["collapsed (why)"] == "KnowMem retain 0.05 < 0.2 (half of the Original's 0.4)"
    kept = table(tmp_path / "b", demo_dir, 0.4, 0.3, 10)["books-ga"]
    assert kept["collapsed"] is False


def test_without_row_counts_the_value_floor_still_applies():
    rows = [{"run": "Original", "run_id": "o", "KnowMem retain": 0.0372, "PPL": 30.0},
            {"run": "ga", "run_id": "g", "KnowMem retain": 0.0182, "PPL": 30.0}]
    (ga,) = [r for r in mark_collapse(rows, "text") if r["run"] == "ga"]
    assert ga["collapsed"] is None and ga["collapsed (why)"].startswith("cannot tell")
