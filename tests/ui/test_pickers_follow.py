"""Pickers that follow the person: the Token probabilities page's greedy-answers row picker
follows the forget row chosen at the top of the page (it stayed on the first row it showed),
and the Runs page's selected run is kept in the URL (``?run=...``), so a reload or a shared
link opens the same run (a reload went back to the newest run). Hand-built run folders."""

from __future__ import annotations

import pytest

from tests.helpers.own_data import TEXT_PROMPT, TEXT_TOKENS, _token_table, fake_run
from tests.helpers.ui import open_page

pytestmark = pytest.mark.slow


def two_row_project(ui_env, demo_dir):
    """A text project whose Original and SGA run have token tables and greedy continuations
    of forget rows 0, 1 and 2."""
    from sga_core.fileio import atomic_write_json, atomic_write_jsonl
    from sga_core.projects import create_project

    project = create_project("txt", demo_dir / "text_forget.jsonl",
                             demo_dir / "text_retain.jsonl", kind="text",
                             root=ui_env / "workspace")
    probs = [0.9, 0.95, 0.8, 0.99, 0.99, 0.7, 0.6, 0.5, 0.6, 0.4]
    for run_id, method in (("txt-original", "finetune"), ("sga-text", "sga")):
        run_dir = fake_run(ui_env / "runs", project, run_id, method=method)
        atomic_write_json(run_dir / "eval" / "summary.json", {
            "task": "text", "rows": {"forget": 3},
            "metrics": {"forget_verbmem": {"name": "forget_verbmem", "value": 0.5}}})
        atomic_write_jsonl(run_dir / "eval" / "tokens.jsonl",
                           [{**_token_table(probs, i), "prompt": f"{TEXT_PROMPT} {i}"}
                            for i in range(3)])
        atomic_write_jsonl(run_dir / "eval" / "per_sample.jsonl", [
            {"set": "forget", "index": i, "prompt": f"{TEXT_PROMPT} {i}",
             "reference": "".join(TEXT_TOKENS), "generated": f"{run_id} continues row {i}"}
            for i in range(3)])
    return project


def test_the_greedy_answers_row_follows_the_chosen_forget_row(ui_env, demo_dir):
    two_row_project(ui_env, demo_dir)
    at = open_page("app_pages/tokens.py")
    at.selectbox(key="_project_picker").set_value("txt").run()
    assert not at.exception, at.exception
    first = at.selectbox(key="tokens.row").value  # a starred row, or the first
    assert at.selectbox(key="tokens.answer_row.forget").value == first
    other, third = [i for i in range(3) if i != first][:2]
    at.selectbox(key="tokens.row").set_value(other).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="tokens.answer_row.forget").value == other
    assert f"sga-text continues row {other}" in str(at.table[0].value.to_dict())
    # the person may still look at another row's answers, until the top row changes again
    at.selectbox(key="tokens.answer_row.forget").set_value(first).run()
    assert at.selectbox(key="tokens.answer_row.forget").value == first
    at.selectbox(key=f"tokens.mark.{other}").set_value(3).run()  # another token, same row
    assert at.selectbox(key="tokens.answer_row.forget").value == first
    at.selectbox(key="tokens.row").set_value(third).run()
    assert at.selectbox(key="tokens.answer_row.forget").value == third
    at.radio(key="tokens.set").set_value("retain").run()
    at.radio(key="tokens.set").set_value("forget").run()  # back: still the chosen row
    assert at.selectbox(key="tokens.answer_row.forget").value == third
    assert not at.exception, at.exception


def runs_page(query: dict | None = None):
    from streamlit.testing.v1 import AppTest

    from tests.helpers.ui import APP

    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query or {})
    at.run()
    at.switch_page("app_pages/runs.py").run()
    assert not at.exception, at.exception
    return at


def test_the_selected_run_survives_a_reload_through_the_url(ui_env):
    from sga_core.projects import create_demo_project
    from tests.helpers.own_data import metrics

    project = create_demo_project(root=ui_env / "workspace")
    for run_id in ("sga-20261122-100000", "sga-20261122-110000", "sga-20261122-120000"):
        fake_run(ui_env / "runs", project, run_id, metrics=metrics())
    at = runs_page()
    first = at.selectbox(key="runs.select").value
    ids = [o.split(" — ")[0] for o in at.selectbox(key="runs.select").options]
    chosen = next(i for i in ids if i != first)
    at.selectbox(key="runs.select").set_value(chosen).run()
    assert at.query_params.get("run") == chosen  # the URL keeps it
    # a reload: a new session with the same URL opens the same run
    again = runs_page({"project": "demo", "run": chosen})
    assert again.selectbox(key="runs.select").value == chosen
    # a link naming a run that is not there opens the usual default
    gone = runs_page({"project": "demo", "run": "nope-20261122-000000"})
    assert gone.selectbox(key="runs.select").value == first
