"""A whole-table generation never overwrites an answer the user edited while it ran: the
job takes a snapshot of the table when it starts and, when it finishes, writes only the
answers nobody changed since; it reports "kept N answers you edited while generating" in
its status, and the Normal answers page shows it.

The job is real (``python -m sga_core.normals.job``, the idk backend, no network). The edit
lands between the job's generation and its merge deterministically: the test holds the
table's lock (the one the job's merge takes), waits for the job's result file, edits the
table (the same thread may take the lock again), then lets the job merge."""

from __future__ import annotations

from sga_core import workbench as wb
from sga_core.data import NormalAnswer, NormalTable
from sga_core.fileio import file_lock
from sga_core.normals import job
from sga_core.projects import create_demo_project
from sga_core.projects.project import NORMALS_LOCK
from sga_core.runs.queue import wait_until

TIMEOUT = 120


def seeded(project) -> NormalTable:
    table = NormalTable([NormalAnswer(i, j, f"curated {i}.{j}", "manual", None, True)
                         for i in range(10) for j in (1, 2, 3)], 4)
    project.save_normals(table, "curated")
    return table


def generate_with_an_edit_midway(project, edit) -> dict:
    d = job.job_dir(project)
    with file_lock(project.path / NORMALS_LOCK):
        job.start(project, "idk", 4, {"seed": 3})
        assert wait_until(lambda: (d / "result.jsonl").exists()
                          or job.status(project).get("state") != "running", TIMEOUT), \
            job.status(project)
        assert job.status(project)["state"] == "running"  # generated, waiting to merge
        edit()
    assert wait_until(lambda: job.status(project).get("state") != "running", TIMEOUT), \
        job.status(project)
    return job.status(project)


def test_answers_edited_while_generating_are_kept(tmp_path):
    project = create_demo_project(root=tmp_path / "ws")
    seeded(project)
    row0 = sorted((a for a in project.normals().answers if a.forget_index == 0),
                  key=lambda a: a.k)

    def edit():  # the page's edit of row 0: answers 1 and 3 changed, 2 as it was
        wb.save_normals_row(project, 0, ["mine 1", "curated 0.2", "mine 3"], row0)

    st = generate_with_an_edit_midway(project, edit)
    assert st["state"] == "completed" and st["applied"], st
    after = project.normals()
    assert after.get(0, 1).text == "mine 1" and after.get(0, 3).text == "mine 3"
    assert after.get(0, 2).source == "idk"  # not edited: generated
    assert all(a.source == "idk" for a in after.answers if a.forget_index != 0)
    assert st["kept_edits"] == 2
    assert "kept 2 answers you edited while generating" in st["message"]
    assert st["outcome"] == "merged"
    history = project.history()
    assert "generate-idk-all-rows" in history[0].name and "edit-row-0" in history[1].name


def test_without_an_edit_the_generation_replaces_every_answer(tmp_path):
    project = create_demo_project(root=tmp_path / "ws")
    seeded(project)
    st = generate_with_an_edit_midway(project, lambda: None)
    assert st["state"] == "completed" and st["outcome"] == "replaced", st
    assert st["kept_edits"] == 0 and "kept" not in st["message"]
    assert all(a.source == "idk" for a in project.normals().answers)
    assert len(project.normals()) == 30


def test_the_page_shows_the_kept_edits(ui_env):
    from tests.helpers.ui import open_page, shown

    project = create_demo_project(root=ui_env / "workspace", overwrite=True)
    seeded(project)
    row3 = sorted((a for a in project.normals().answers if a.forget_index == 3),
                  key=lambda a: a.k)
    st = generate_with_an_edit_midway(
        project, lambda: wb.save_normals_row(project, 3, ["x", "y", "z"], row3))
    assert st["kept_edits"] == 3
    at = open_page("app_pages/normals.py")
    notes = [shown(w.value) for w in at.warning]
    assert any("kept 3 answers you edited while generating" in n for n in notes), notes
