"""The Normal answers page's saved versions follow the saves made while the page is open:
after a restore (or any other save) the box shows the new newest version, not the one that
was newest, or picked, before (a trial saw a stale list until it reloaded the page)."""

from __future__ import annotations

from tests.helpers.ui import open_page


def version_box(at):
    return next(s for s in at.selectbox if s.label == "saved versions (newest first)")


def test_saved_versions_follow_saves_in_the_same_session(ui_env):
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project

    project = create_demo_project(root=ui_env / "workspace")
    project.save_normals(idk_normals(10, 4), "seed")
    project.save_normals(idk_normals(10, 3), "second")
    at = open_page("app_pages/normals.py")
    oldest = project.history()[-1].name
    assert version_box(at).value == project.history()[0].name
    version_box(at).set_value(oldest).run()
    at.button(key="normals.restore").click().run()
    assert not at.exception, at.exception
    newest = project.history()[0].name
    assert "restore" in newest
    assert version_box(at).options[0] == newest
    assert version_box(at).value == newest, "the box still shows the version picked before"
    # a save from elsewhere (a generation job) shows up at the next rerun too
    project.save_normals(idk_normals(10, 4), "generate")
    at.run()
    assert version_box(at).value == project.history()[0].name
    assert len(version_box(at).options) == 4
