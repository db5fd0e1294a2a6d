"""The Data page's published models: it says which Original, Retained model and reference
the project's runs use (Prepare's, a published checkpoint, a folder, an eval log), names
them from its fields, and refuses a checkpoint or log that cannot serve, saying why, with
nothing changed. No model is loaded (tests/ui/test_no_model_in_the_ui.py)."""

from __future__ import annotations

import json

import pytest

from sga_core.assets import DEMO_DIR
from sga_core.projects import create_project, load_project
from sga_core.projects.published import named
from tests.helpers.stress import runner_lock
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow


def model_folder(folder):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    (folder / "model.safetensors").write_bytes(b"w")
    (folder / "tokenizer.json").write_text("{}")
    return folder


def test_data_page_names_and_shows_published_models(ui_env, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(ui_env / "hub"))
    create_project("mine", DEMO_DIR / "forget.jsonl", DEMO_DIR / "retain.jsonl",
                   root=ui_env / "workspace")
    at = open_page("app_pages/data.py", "mine")
    text = " ".join(shown(m.value) for m in at.markdown)
    assert "Original: none yet" in text and "Reference (Forget Quality, PrivLeak): none" in text
    folder = model_folder(ui_env / "published" / "full")
    at.text_input(key="data.published.original").set_value(str(folder))
    at.text_input(key="data.published.retained").set_value("org/not-cached")
    at.button(key="FormSubmitter:data.published_form-Save published models").click().run()
    errors = [shown(e.value) for e in at.error]
    assert any("Nothing was changed" in e and "org/not-cached is not in the local Hugging "
               "Face cache" in e for e in errors), errors
    assert named(load_project("mine", ui_env / "workspace")) == {}
    at.text_input(key="data.published.retained").set_value("")
    at.button(key="FormSubmitter:data.published_form-Save published models").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    text = " ".join(shown(m.value) for m in at.markdown)
    assert f"Original: published checkpoint (folder): {folder}" in text, text
    assert "Retained: none yet" in text
    assert named(load_project("mine", ui_env / "workspace")) == {"original": str(folder)}
    # its evaluation, for Results' Original row (held in the queue: no runner takes it)
    assert "published Original: not evaluated yet" in text, text
    with runner_lock(ui_env / "runs"):
        at.button(key="data.published_eval").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any("Queued: mine-published-original" in shown(s.value) for s in at.success)
        text = " ".join(shown(m.value) for m in at.markdown)
        assert "published Original: evaluation queued (mine-published-original)" in text
    linked = ui_env / "runs" / "mine-published-original" / "model"
    assert linked.is_symlink() and linked.resolve() == folder.resolve()
    at.switch_page("app_pages/runs.py").run()  # it lists the folder, with nothing trained
    assert not at.exception, at.exception
    assert "mine-published-original" in str([s.options for s in at.selectbox])
    table = at.dataframe[0].value
    assert list(table["method"]) == ["published original (evaluated only)"]  # no "finetune"
    captions = " ".join(shown(c.value) for c in at.caption)
    assert (f"The evaluation of the published Original model {folder.resolve()}: "
            "nothing was trained here") in captions, captions
    at.switch_page("app_pages/data.py").run()
    # the Train page unlearns the published Original, and says it is the published one
    at.switch_page("app_pages/train.py").run()
    assert not at.exception, at.exception
    captions = " ".join(shown(c.value) for c in at.caption)
    assert f"The project's Original is the published {folder} (Data page)" in captions
    assert f"`{folder}`" in captions
    assert at.radio(key="train.model_mode").options == ["published original", "other model"]
