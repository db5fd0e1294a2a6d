"""Evaluation sets are parsed once per file version, not on every render of the Data page
(a 120 MiB set cost 9 s a render): the summary the page lists is cached by the file's path,
size, mtime and inode, and a changed file is parsed again."""

from __future__ import annotations

import json

from sga_core.projects import create_demo_project
from sga_core.projects.eval_sets import set_summary
from tests.helpers.ui import open_page


def misses() -> int:
    return set_summary.cache_info().misses


def test_a_second_read_does_not_parse_and_a_changed_file_does(tmp_path):
    project = create_demo_project(root=tmp_path / "ws")
    set_summary.cache_clear()
    first = project.eval_set_info()
    assert [i["name"] for i in first] == ["real_authors", "world_facts"]
    assert misses() == 2
    assert project.eval_set_info() == first
    assert misses() == 2 and set_summary.cache_info().hits == 2
    path = project.eval_sets()["real_authors"]
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(rows[0]) + "\n")
    changed = project.eval_set_info()
    assert misses() == 3
    assert changed[0]["rows"] == first[0]["rows"] + 1 and changed[1] == first[1]


def test_data_page_rerender_does_not_reparse_sets(ui_env):
    set_summary.cache_clear()
    at = open_page("app_pages/data.py")
    listed = at.dataframe[-1].value
    assert list(listed["set"]) == ["real_authors", "world_facts"]
    parsed = misses()
    assert parsed == 2
    at.run()
    assert not at.exception
    assert misses() == parsed  # the second render parsed nothing
    from sga_core.projects import load_project

    path = load_project("demo", ui_env / "workspace").eval_sets()["world_facts"]
    line = path.read_text(encoding="utf-8").splitlines()[0]
    with path.open("a", encoding="utf-8") as f:
        f.write(line + "\n")
    at.run()
    assert not at.exception
    assert misses() == parsed + 1
    rows = dict(zip(at.dataframe[-1].value["set"], at.dataframe[-1].value["rows"]))
    assert rows["world_facts"] == listed["rows"].iloc[1] + 1
