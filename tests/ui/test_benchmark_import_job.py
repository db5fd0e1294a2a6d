"""The Data page's benchmark import runs as a job, never in the server's process (the
copyright import once loaded a tokenizer in the server): pressing Import starts
``sga_core.projects.import_job``, the page shows its stage, and when it ends the new project
is chosen; a refused import shows the importer's message and writes nothing. (That the
server then holds no model library: tests/ui/test_no_model_in_the_ui.py.)"""

from __future__ import annotations

from sga_core.projects import list_projects, load_project
from tests.helpers.ui import open_page, shown
from tests.helpers.wait import wait_for

BOOK = " ".join(f"Chapter {i}: the lighthouse keeper counted {i} ships at dawn."
                for i in range(60)).encode()
RETAIN = " ".join(f"Note {i}: the market sold {i} baskets of apples." for i in range(40)
                  ).encode()


def _fill(at, tokenizer: str, book: bytes = BOOK):
    at.radio(key="bench.kind").set_value("copyright").run()
    at.text_input(key="bench.name").set_value("my-book").run()
    at.text_input(key="bench.copyright.model").set_value(tokenizer).run()
    at.number_input(key="bench.copyright.segment_tokens").set_value(64).run()
    at.number_input(key="bench.copyright.prompt_tokens").set_value(16).run()
    ups = [u for u in at.get("file_uploader") if "bench." in str(u.proto.id)]
    ups[0].set_value(("book.txt", book, "text/plain"))
    ups[1].set_value(("retain.txt", RETAIN, "text/plain"))
    at.run()


def _wait(at, done, timeout: float = 120):
    """Run the page again until ``done(at)``; the page's errors in the failure."""
    wait_for(lambda: done(at.run()), timeout,
             lambda: f"the import job to end: {[w.value for w in at.error]}", interval=0.5)
    return at


def test_import_runs_as_a_job_and_chooses_the_new_project(ui_env, tiny_model_dir):
    at = open_page("app_pages/data.py")
    _fill(at, str(tiny_model_dir))
    at.button(key="bench.go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    from sga_core.projects import import_job

    assert import_job.status().get("benchmark") == "copyright"  # a job was started
    at = _wait(at, lambda a: a.session_state["project"] == "my-book" if "project" in
               a.session_state else False)
    p = load_project("my-book", ui_env / "workspace")
    assert p.protocol == "copyright" and len(p.forget()) > 1
    assert any("Created project" in shown(s.value) for s in at.success)
    assert not list((ui_env / "workspace" / ".import" / "import").glob("*.upload"))


def test_a_refused_import_shows_the_importers_message(ui_env, tiny_model_dir):
    at = open_page("app_pages/data.py")
    _fill(at, str(tiny_model_dir), book=b"caf\xe9 is not UTF-8 " * 20)
    at.button(key="bench.go").click().run()
    at = _wait(at, lambda a: any("Nothing was imported" in e.value for e in a.error))
    errors = [shown(e.value) for e in at.error]
    assert any("book.txt" in e and "UTF-8" in e for e in errors), errors
    assert "my-book" not in list_projects(ui_env / "workspace")


def test_the_bar_follows_the_import_jobs_progress(ui_env):
    """While the import runs, the bar stands at done of total of its stage, not at 0."""
    import os

    from sga_core.projects import import_job
    from sga_core.projects import jobs as bgjob

    home = import_job.home()
    bgjob.update(home, import_job.NAME, state="running", benchmark="muse-books",
                 pid=os.getpid(), started_at="2026-01-01T00:00:00Z")
    import_job.recorder(home)("cutting raw/retain2.json into 2048-token chunks", 1, 4)
    at = open_page("app_pages/data.py")
    (bar,) = at.get("progress")
    assert bar.proto.value == 25
    assert "cutting raw/retain2.json into 2048-token chunks 1/4" in shown(bar.proto.text)
