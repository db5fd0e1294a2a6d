"""The home page renders on a first start (demo project created) with the coefficients."""

from tests.ui import open_page


def test_home_first_start(ui_env):
    at = open_page("app_pages/home.py")
    assert (ui_env / "workspace" / "demo" / "project.json").exists()
    assert any("push down x1.60" in i.value for i in at.info)
    at.number_input(key="home.r").set_value(0.2).run()
    assert any("push down x0.85" in i.value and "push down x0.05" in i.value for i in at.info)
    assert any("10 forget" in m.value for m in at.markdown)
