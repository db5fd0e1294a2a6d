"""The Token probabilities page for a text project (docs/token-probabilities.md): each token of
a forget passage's continuation with its probability under the Original and each run, the
token whose probability fell most followed first (" Mits" of Mitsotakis), across runs and
across training steps (the probes score the whole passage, so the token is found by its
context), and the greedy continuations side by side. Hand-built evaluations."""

from __future__ import annotations

import pytest

from tests.helpers.own_data import TEXT_PROMPT, text_token_project
from tests.helpers.ui import open_page, shown

pytestmark = pytest.mark.slow


def test_a_text_project_shows_its_continuation_tokens(ui_env, demo_dir):
    text_token_project(ui_env, demo_dir)
    at = open_page("app_pages/tokens.py")
    at.selectbox(key="_project_picker").set_value("txt").run()
    assert not at.exception, at.exception
    row = at.selectbox(key="tokens.row")
    assert row.options == [f"0: {TEXT_PROMPT}"]
    texts = [shown(m.value) for m in at.markdown]
    assert f"**Prompt:** {TEXT_PROMPT}" in texts
    assert any(t.startswith("**Continuation:** Prime Minister Mitsotakis said 57") for t in texts)
    mark = at.selectbox(key="tokens.mark.0")
    assert mark.value == 2 and mark.options[2] == "2: Mits"  # fell most: 0.8 -> 0.2
    follow = [shown(m.value) for m in at.markdown if "p('Mits')" in shown(m.value)]
    assert any("0.800" in t for t in follow) and any("0.200" in t for t in follow), follow
    import json

    charts = at.get("plotly_chart")
    assert len(charts) == 2  # the heatmap and the token across training steps
    steps = json.loads(charts[1].proto.spec)["data"]
    (line,) = [d for d in steps if d.get("mode") == "lines+markers"]
    assert line["x"] == [0, 1, 2] and line["y"] == pytest.approx([0.8, 0.5, 0.2])
    heat = json.loads(charts[0].proto.spec)["data"][0]
    assert heat["x"][2] == "2: Mits" and len(heat["y"]) == 2
    assert "top-5" in heat["text"][0][2]  # the alternatives on hover
    mark.set_value(6).run()  # follow " 57" the same way
    follow = [shown(m.value) for m in at.markdown if "p('57')" in shown(m.value)]
    assert any("0.600" in t for t in follow) and any("0.100" in t for t in follow), follow
    steps = json.loads(at.get("plotly_chart")[1].proto.spec)["data"]
    (line,) = [d for d in steps if d.get("mode") == "lines+markers"]
    assert line["y"] == pytest.approx([0.8, 0.45, 0.1])
    tokens = "".join(h.proto.body for h in at.html)
    assert "Mits" in tokens and "border:2px solid" in tokens  # the followed token outlined
    (table,) = at.table
    assert "sga-text continues" in str(table.value.to_dict())
    assert not [b for b in at.button if b.key == "tokens.reeval"]  # every run has its tables


def test_the_token_followed_first_fell_under_unlearning_not_in_the_retained(ui_env, demo_dir):
    # the Retained never knew token 3 (0.99 -> 0.0): no fall that unlearning caused
    text_token_project(ui_env, demo_dir, retained=True)
    at = open_page("app_pages/tokens.py")
    at.selectbox(key="_project_picker").set_value("txt").run()
    assert not at.exception, at.exception
    assert "txt-retain-ref" in at.multiselect(key="tokens.runs").value
    mark = at.selectbox(key="tokens.mark.0")
    assert mark.value == 2 and mark.options[2] == "2: Mits"


def test_runs_evaluated_without_token_tables_are_offered_a_re_evaluation(ui_env, demo_dir):
    project = text_token_project(ui_env, demo_dir)
    old = ui_env / "runs" / "sga-text"
    (old / "eval" / "tokens.jsonl").unlink()  # evaluated before text token tables existed
    at = open_page("app_pages/tokens.py")
    at.selectbox(key="_project_picker").set_value(project.name).run()
    assert any("1 evaluated run without token tables" in shown(c.value) for c in at.caption)
    assert at.button(key="tokens.reeval").label == "Re-evaluate them (queued jobs)"


def test_a_copyright_project_gets_the_same_token_view(ui_env, demo_dir, tiny_model_dir,
                                                      monkeypatch):
    """The copyright task (FLAT's protocol: a book passage's prefix, then its continuation)
    writes its token tables at evaluation like MUSE, for real here, and the page shows them
    the same way: each forget passage's prompt, the continuation's tokens under the Original
    and the run, one followed token."""
    import json
    import shutil

    from sga_core.evaluation.run import evaluate_run
    from sga_core.evaluation.text import prompt_and_continuation
    from sga_core.projects import create_project
    from tests.helpers.own_data import fake_run

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # its lm-eval utility tasks: no download
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    rows = (demo_dir / "text_forget.jsonl").read_text().splitlines()[:2]
    forget = ui_env / "book.jsonl"
    forget.write_text("\n".join(rows) + "\n")
    project = create_project("book", forget, demo_dir / "text_retain.jsonl", kind="text",
                             root=ui_env / "workspace", protocol="copyright")
    for run_id, method in (("book-original", "finetune"), ("sga-book", "sga")):
        run_dir = fake_run(ui_env / "runs", project, run_id, method=method,
                           model=str(tiny_model_dir))
        shutil.copytree(tiny_model_dir, run_dir / "model")
        summary = evaluate_run(run_dir, overrides={"max_new_tokens": 4, "batch_size": 4,
                                                   "protocol": project.protocol})
        assert summary["protocol"]["name"] == "copyright"
    tables = [json.loads(ln) for ln in
              (ui_env / "runs" / "sga-book" / "eval" / "tokens.jsonl").read_text().splitlines()]
    assert [t["index"] for t in tables] == [0, 1]
    for t, row in zip(tables, project.forget()):
        prompt, continuation = prompt_and_continuation(row)
        assert t["prompt"] == prompt
        spelled = "".join(t["tokens"]).strip()  # (a character split over two byte-level
        assert continuation.startswith(spelled[:10])  # tokens shows as two halves)
        assert len(t["probs"]) == len(t["tokens"]) > 0

    at = open_page("app_pages/tokens.py")
    at.selectbox(key="_project_picker").set_value("book").run()
    assert not at.exception, at.exception
    assert len(at.selectbox(key="tokens.row").options) == 2
    texts = [shown(m.value) for m in at.markdown]
    assert any(t.startswith("**Prompt:** " + tables[0]["prompt"][:40]) for t in texts), texts
    assert any(t.startswith("**Continuation:** " + "".join(tables[0]["tokens"]).strip()[:20])
               for t in texts), texts
    assert sum("— p(" in t for t in texts) == 2  # the Original and the run
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert len(heat["y"]) == 2 and len(heat["x"]) == len(tables[0]["tokens"])

    # a stress test of the text run: its 8-bit variant scores the same continuation tokens,
    # so it lines up as an extra heatmap row under the run
    from sga_core.stress import StressSettings
    from sga_core.stress.run import stress_run

    res = stress_run(ui_env / "runs" / "sga-book", ["quant8"], StressSettings(rouge=False),
                     overrides={"protocol": project.protocol})["quant8"]
    assert res["kind"] == "text"
    assert [s["tokens"]["tokens"] for s in res["samples"]] == [t["tokens"] for t in tables]
    at = open_page("app_pages/tokens.py")
    at.selectbox(key="_project_picker").set_value("book").run()
    at.toggle(key="tokens.stressed").set_value(True).run()
    assert not at.exception, at.exception
    heat = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert len(heat["y"]) == 3 and heat["y"][2].endswith(" · quant8")
    # the layer view: each model (the variant too, from its stress result) at the tiny
    # model's 2 layers, the last layer its output (the token heatmap's value)
    layers = json.loads(at.get("plotly_chart")[1].proto.spec)["data"][0]
    assert layers["y"] == heat["y"] and layers["x"] == [1, 2]
    mark = at.selectbox(key=f"tokens.mark.{at.selectbox(key='tokens.row').value}").value
    for k in range(3):
        assert layers["z"][k][-1] == pytest.approx(heat["z"][k][mark], abs=1e-5)
