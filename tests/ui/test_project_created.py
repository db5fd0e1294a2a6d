"""Creating a project on the Data page says so, by name, after the page reruns onto it
(a trial's Create project gave no sign that anything had happened)."""

from __future__ import annotations

from tests.helpers.ui import open_page, shown


def test_create_project_confirms_by_name(ui_env, demo_dir):
    at = open_page("app_pages/data.py")
    at.text_input(key="data.name").set_value("mine").run()
    ups = at.get("file_uploader")
    ups[0].set_value(("f.jsonl", (demo_dir / "forget.jsonl").read_bytes(), "text/plain"))
    ups[1].set_value(("r.csv", b"question,answer\nWho?,Me.\n", "text/csv"))
    at.run()
    at.button(key="data.create").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    done = [shown(s.value) for s in at.success]
    assert any("Created project **mine**" in s and "10 forget rows, 1 retain row" in s
               for s in done), done
    at.run()  # shown once: the next action's page does not repeat it
    assert not any("Created project" in shown(s.value) for s in at.success)
