"""The before/after probe shows what was asked and answered as a person reads it: a text
project's prefix is labelled as a text prefix (not "Q:"), and the answer's tokens leave out
special tokens (the end-of-text token the answer is scored with, a chat template's end token
such as <|im_end|>), which the decoded answer beside them leaves out too."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers.ui import open_page, shown
from tests.helpers.wait import wait_for

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("kind, asked", [("qa", "Who is Lucien Marchetti?"),
                                         ("text", "The river ran")])
def test_probe_tokens_leave_out_special_tokens(tiny_model_dir, kind, asked):
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer
    from sga_core.projects.probe_job import answer_with_probs

    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    out = answer_with_probs(load_model(str(tiny_model_dir)).eval(), enc, asked, kind, 6)
    special = set(enc.tok.all_special_tokens)
    if out["answer"].strip():
        assert not special & set(out["tokens"]), out["tokens"]
        assert enc.eos_id not in out["token_ids"]
    else:  # the tiny model may end at once: then its end token is the one token shown
        assert len(out["tokens"]) == 1 and out["tokens"][0] in special, out["tokens"]
    assert len(out["tokens"]) == len(out["probs"]) == len(out["top"]) == len(out["token_ids"])


def test_a_text_projects_probe_is_labelled_text_prefix(ui_env, demo_dir, tiny_model_dir):
    from sga_core.projects import create_project

    project = create_project("txt", demo_dir / "text_forget.jsonl",
                             demo_dir / "text_retain.jsonl", kind="text",
                             root=ui_env / "workspace")
    assert project.kind == "text"
    shutil.copytree(tiny_model_dir, ui_env / "runs" / "txt-original" / "model")
    at = open_page("app_pages/probe.py")
    at.selectbox(key="_project_picker").set_value("txt").run()
    assert at.text_input(key="probe.q").label == "text prefix"
    at.text_input(key="probe.q").set_value("The river ran").run()
    at.button(key="probe.ask").click().run()

    def answered():
        return at.error or any("The river ran" in shown(m.value) for m in at.markdown)

    if not answered():  # the probe job answers in its own process
        wait_for(lambda: (at.run(), answered())[1], 120, "the probe's answer", interval=0.5)
    assert not at.error, [e.value for e in at.error]
    asked = [shown(m.value) for m in at.markdown if "The river ran" in shown(m.value)]
    assert asked == ["**Text prefix:** The river ran"], asked
    tokens = "".join(h.proto.body for h in at.html)
    assert "&lt;/s&gt;" not in tokens  # the tiny model's end-of-text token


def test_an_empty_answer_shows_its_end_token():
    """A model that ends at once answers with nothing but its end token: that token and its
    probability are shown, not an empty row."""
    from sga_core.projects.probe_job import shown_tokens

    rec = {"token_ids": [7], "tokens": ["<|im_end|>"], "probs": [0.9], "top": [[]]}
    assert shown_tokens(rec, {7}) == rec
    rec = {"token_ids": [5, 7], "tokens": ["Paris", "<|im_end|>"], "probs": [0.4, 0.9],
           "top": [[], []]}
    assert shown_tokens(rec, {7})["tokens"] == ["Paris"]
