"""The Results "evaluated on subsets" line names every row evaluated on a subset: the
Original evaluated on the same subset as the Retained was left out of it (one name per
subset). Real summary.json files under run folders, read by the Results table."""

from __future__ import annotations

from sga_core.fileio import atomic_write_json
from tests.helpers.own_data import fake_run


def test_every_row_evaluated_on_a_subset_is_named(tmp_path, demo_dir):
    from sga_core.projects import create_project
    from sga_core.report.table import protocol_note, results_table

    project = create_project("books", demo_dir / "text_forget.jsonl",
                             demo_dir / "text_retain.jsonl", kind="text",
                             root=tmp_path / "workspace")
    runs = tmp_path / "runs"
    for run_id, method, n, extra in (("books-original", "finetune", 20, {}),
                                     ("books-retain-ref", "finetune", 20,
                                      {"include_forget": False}),
                                     ("books-ga", "ga", 10, {})):
        run_dir = fake_run(runs, project, run_id, method=method, **extra)
        atomic_write_json(run_dir / "eval" / "summary.json", {
            "task": "text", "rows": {"forget": n, "holdout": n},
            "rows_of": {"forget": 119, "holdout": 119},
            "metrics": {"forget_verbmem": {"name": "forget_verbmem", "value": 0.05}}})
    rows = results_table(project, runs, "text")
    ga = next(r["run"] for r in rows if r["run_id"] == "books-ga")
    note = protocol_note(rows)
    assert ("evaluated on subsets: Original, Retained: forget: 20 of 119 rows, holdout: 20 of "
            f"119 rows; {ga}: forget: 10 of 119 rows, holdout: 10 of 119 rows") in note, note
