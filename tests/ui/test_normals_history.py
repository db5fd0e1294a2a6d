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


def test_an_answer_without_a_similarity_shows_a_dash_not_none(ui_env):
    """A hand-edited answer has no cosine to its forget row: the page showed "None", which
    reads like a value; it shows "—", and a retrieved answer its cosine."""
    from sga_core.data.normal_table import NormalAnswer, NormalTable
    from sga_core.projects import create_demo_project

    project = create_demo_project(root=ui_env / "workspace")
    answers = [NormalAnswer(i, k, f"answer {i}.{k}", "retrieval", 0.8123)
               for i in range(10) for k in (1, 2, 3)]
    answers[0] = NormalAnswer(0, 1, "my own words", "manual", None, edited=True)
    project.save_normals(NormalTable(answers, 4), "mixed")
    at = open_page("app_pages/normals.py")
    assert not at.exception, at.exception
    frames = [f.value for f in at.dataframe if "score" in f.value.columns]
    shown = [list(f["score"]) for f in frames]
    assert ["—", "0.812", "0.812"] in shown, shown  # row 0's editor
    assert not any("None" in str(v) for values in shown for v in values)
