"""A forget row with no normal answer yet (a generation in which that row failed, or an
import that covered only some rows): the Normal answers page shows it with an empty editor
instead of failing on a table whose empty text column pandas typed as numbers."""

from __future__ import annotations

from sga_core.data.normal_table import NormalTable
from sga_core.normals.idk import idk_normals
from sga_core.projects import create_demo_project
from tests.helpers.ui import open_page


def test_a_row_without_answers_opens_in_the_editor(ui_env):
    project = create_demo_project(root=ui_env / "workspace")
    full = idk_normals(10, 4)
    project.save_normals(NormalTable([a for a in full.answers if a.forget_index != 0], 4),
                         "row 0 failed")
    at = open_page("app_pages/normals.py")  # row 0 is the first shown
    assert at.selectbox(key="normals.row").value == 0
    at.selectbox(key="normals.row").set_value(1).run()
    assert not at.exception, at.exception
