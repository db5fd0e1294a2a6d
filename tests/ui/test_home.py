"""The home page renders on a first start (demo project created) with the coefficients."""

from tests.helpers.ui import open_page


def test_home_first_start(ui_env):
    at = open_page("app_pages/home.py")
    assert (ui_env / "workspace" / "demo" / "project.json").exists()
    assert any("push down x1.60" in i.value for i in at.info)
    at.number_input(key="home.r").set_value(0.2).run()
    assert any("push down x0.85" in i.value and "push down x0.05" in i.value for i in at.info)
    assert any("10 forget" in m.value for m in at.markdown)


def test_home_counts_the_chosen_projects_runs_and_names_each_jobs_project(ui_env, tmp_path):
    """Home said "4 unlearning runs so far" for a project with one (it counted every
    project's runs), and listed other projects' active jobs without saying whose."""
    from sga_core.projects import create_demo_project
    from tests.helpers.own_data import fake_run, own_project, tofu_files

    demo = create_demo_project(root=ui_env / "workspace")
    mine = own_project(ui_env / "workspace", tofu_files(tmp_path / "files"))
    for i in range(3):
        fake_run(ui_env / "runs", demo, f"demo-sga-{i}")
    fake_run(ui_env / "runs", mine, "mine-sga", state="running")
    at = open_page("app_pages/home.py")
    at.selectbox(key="_project_picker").set_value("mine").run()
    text = " ".join(m.value for m in at.markdown)
    assert "1 unlearning run of this project" in text, text
    assert "mine-sga" in text and "project mine" in text
    at.selectbox(key="_project_picker").set_value("demo").run()
    assert "3 unlearning runs of this project" in " ".join(m.value for m in at.markdown)
