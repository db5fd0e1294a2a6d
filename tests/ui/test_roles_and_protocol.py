"""The Data page: a set name that gives a role says the role in words and is confirmed before
the set is added; a forget_eval whose passages are not in the forget set is warned about; the
evaluation protocol is chosen there (and shown on Train), and runs evaluated under another
protocol are offered a re-evaluation that is queued with the protocol."""

from __future__ import annotations

import json

import pytest

from sga_core.assets import DEMO_DIR
from sga_core.projects import create_project, load_project
from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow


def on_data(name: str):
    at = open_page("app_pages/data.py")
    at.selectbox(key="_project_picker").set_value(name).run()
    assert not at.exception, at.exception
    return at


def test_a_role_name_is_said_in_words_confirmed_and_checked(ui_env):
    project = create_project("news", DEMO_DIR / "text_forget.jsonl",
                             DEMO_DIR / "text_retain.jsonl", root=ui_env / "workspace")
    rows = [json.loads(line) for line in (DEMO_DIR / "text_forget.jsonl").read_text()
            .splitlines()]
    passages = [{"prompt": r["prompt"], "gt": r["continuation"][:60]} for r in rows[:2]]
    passages += [{"prompt": "Mitsotakis said", "gt": " the talks resume."}] * 2
    at = on_data("news")
    at.get("file_uploader")[2].set_value(
        ("verbmem.json", json.dumps(passages).encode(), "application/json")).run()
    at.text_input(key="data.set_name.0").set_value("forget_eval").run()
    infos = [shown(i.value) for i in at.info]
    assert any("gives this set a role: it replaces the forget rows for VerbMem and PrivLeak"
               in i for i in infos), infos
    assert at.button(key="data.set_add").disabled  # not until the role is confirmed
    at.checkbox(key="data.set_role.0").check().run()
    at.button(key="data.set_add").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Added forget_eval" in shown(s.value) for s in at.success)
    assert any("2 of 4 forget_eval passages do not occur in the trained forget set" in
               shown(w.value) for w in at.warning), [w.value for w in at.warning]
    assert set(project.eval_sets()) == {"forget_eval"}
    # a plain name: its use said, no confirmation asked
    at.text_input(key="data.set_name.1").set_value("passages").run()
    assert at.button(key="data.set_add").disabled  # no file yet
    assert not at.get("checkbox") or "data.set_role.1" not in {c.key for c in at.checkbox}


def test_protocol_is_chosen_shown_on_train_and_reevaluation_is_queued(ui_env):
    from sga_core.runs.listing import eval_request_protocol

    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    run = fake_run(ui_env / "runs", project, "sga-a", metrics=metrics())
    at = on_data("mine")
    assert at.selectbox(key="data.protocol.mine").value == "demo"
    assert not any("another protocol" in shown(w.value) for w in at.warning)
    at.selectbox(key="data.protocol.mine").set_value("tofu").run()
    assert any("TOFU protocol: follows" in shown(c.value) for c in at.caption)
    at.button(key="data.protocol_set").click().run()
    assert not at.exception
    assert load_project("mine", ui_env / "workspace").protocol == "tofu"
    assert any("now evaluated under tofu" in shown(s.value) for s in at.success)
    warned = [shown(w.value) for w in at.warning]
    assert any("1 evaluated run of this project was evaluated under another protocol than "
               "tofu: sga-a (demo)" in w for w in warned), warned
    at.button(key="data.protocol_reevaluate").click().run()
    assert any("Queued the evaluation of 1 run under tofu" in shown(s.value)
               for s in at.success)
    assert eval_request_protocol(run) == "tofu"
    train = open_page("app_pages/train.py")
    train.selectbox(key="_project_picker").set_value("mine").run()
    assert any("Evaluation protocol: TOFU protocol" in shown(c.value) for c in train.caption)
