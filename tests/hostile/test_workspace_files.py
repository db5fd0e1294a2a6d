"""A project folder's own files damaged (cut off, the wrong shape, nested too deeply):
project.json, review.json (the Normals page's review marks), a job's status.json and
spec.json, the r* result. Every page renders with no exception; a damaged project.json (or
r* result) is named on the page with what is wrong, instead of the Home, Data and Normals
pages (or the r* page) failing for the project."""

from __future__ import annotations

import pytest

from sga_core import workbench as wb
from sga_core.projects import create_demo_project
from tests.helpers.ui import open_page

DEEP = "[" * 100000 + "]" * 100000
PAGES = ["home", "data", "normals", "rstar", "train", "runs", "results", "tokens", "probe"]
DAMAGE = {
    "project.json": ["{\"kind\": \"qa\", \"k\"", "[]", '{"k": "x"}', '{"kind": 5}',
                     '{"k": 1e999}', DEEP],
    "review.json": ["[]", '{"reviewed": 5}', '{"reviewed": [[1]]}', "{\"rev", DEEP],
    "generation/status.json": [DEEP],
    "generation/spec.json": [DEEP],
    "rstar/result.json": ["[]", '{"rows": 5}', '{"rows": [1], "summary": {}}', "{\"ro", DEEP,
                          '{"model": "m", "k": 4, "convention": "label", "subset": "all", '
                          '"elapsed_s": 1, "rows": [], "summary": {"n": 3, "median": "x"}}'],
}
CASES = [(rel, i) for rel, shapes in DAMAGE.items() for i in range(len(shapes))]


@pytest.mark.parametrize(("rel", "shape"), CASES)
def test_pages_render_with_a_damaged_project_file(ui_env, rel, shape):
    project = create_demo_project(root=ui_env / "workspace")
    path = project.path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DAMAGE[rel][shape])
    assert PAGES  # each page is checked below
    for page in PAGES:
        at = open_page(f"app_pages/{page}.py")  # asserts no exception
        shown = " ".join(e.value.replace("\\", "") for e in at.error)
        if rel == "project.json" and page in ("data", "normals"):
            assert "project.json" in shown, (page, shown)
        if rel == "rstar/result.json" and page == "rstar":
            assert "rstar/result.json is damaged" in shown, shown


def test_a_damaged_project_json_is_a_project_error(tmp_path):
    project = create_demo_project(root=tmp_path / "ws")
    (project.path / "project.json").write_text("[]")
    with pytest.raises(wb.ProjectError, match="project.json"):
        wb.load_project("demo", root=tmp_path / "ws")


DATA_DAMAGE = {
    "forget.jsonl": ['{"question": "a", "ans', "", '{"question": 5, "answer": [1]}\n'],
    "retain.jsonl": ['{"question": "a", "ans'],
    "normals.jsonl": ["trunc{", '{"forget_index": "x"}\n'],
}
DATA_CASES = [(rel, i) for rel, shapes in DATA_DAMAGE.items() for i in range(len(shapes))]


@pytest.mark.parametrize(("rel", "shape"), DATA_CASES)
def test_pages_name_a_damaged_data_file_of_the_project(ui_env, rel, shape):
    """The project's own data files (written by the workbench, then cut off or edited by
    hand): each page names the file and row in an error, instead of failing with the
    DataError as an exception."""
    project = create_demo_project(root=ui_env / "workspace")
    (project.path / rel).write_text(DATA_DAMAGE[rel][shape])
    named = 0
    for page in PAGES:
        at = open_page(f"app_pages/{page}.py")  # asserts no exception
        named += any(rel in e.value.replace("\\", "") for e in at.error)
    assert named >= 1
