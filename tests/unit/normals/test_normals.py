"""Normal-answer backends: retrieval, OpenAI-compatible API, local model, templates, CLI."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from sga_core.data import NormalTable, load_dataset
from sga_core.normals import BACKENDS, GenerationResult, generate_normals
from sga_core.normals.templates import (
    TemplateError,
    default_template,
    list_templates,
    load_template,
    render,
)

ROOT = Path(__file__).resolve().parents[3]

# --------------------------------------------------------------------------------------------
# Templates


def test_shipped_templates_load():
    templates = {t.name: t for t in list_templates()}
    assert set(templates) == {"tofu_qa", "copyright_continuation", "news_fabrication",
                              "text_different_facts", "altpo_alternate"}
    for t in templates.values():
        assert t.description and t.system and t.user and t.kind in ("qa", "text")
        t.check(t.kind)
    assert "{question}" in templates["tofu_qa"].user
    assert "fictional writers" in templates["tofu_qa"].system
    assert "copyright" in templates["copyright_continuation"].system
    assert "fictional similar news" in templates["news_fabrication"].user
    assert "{answer}" in templates["altpo_alternate"].user  # AltPO rewrites the answer
    assert load_template("tofu_qa") == templates["tofu_qa"]
    assert load_template(templates["tofu_qa"].path) == templates["tofu_qa"]


def test_render_qa_and_text():
    msgs = render("tofu_qa", {"question": "Who is Ada Vell?", "answer": "x"}, "qa")
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[1]["content"].endswith("Question: Who is Ada Vell?")
    row = {"prompt": "Mr and Mrs Dursley of number four", "continuation": "were proud."}
    cont = render("copyright_continuation", row, "text")[1]["content"]
    assert cont == ("Go ahead and finish off this sentence, please: "
                    "Mr and Mrs Dursley of number four")
    news = render("news_fabrication", row, "text")[1]["content"]
    assert "Mr and Mrs Dursley of number four were proud." in news
    plain = {"prompt": "", "continuation": "A whole news story."}
    assert render("copyright_continuation", plain, "text")[1]["content"].endswith(
        "please: A whole news story.")
    assert default_template("qa") == "tofu_qa"
    assert default_template("text", [row]) == "text_different_facts"
    assert default_template("text", [row], "copyright") == "copyright_continuation"
    assert default_template("text", [plain]) == "news_fabrication"


def test_template_errors(tmp_path):
    no_q = tmp_path / "no_q.yaml"
    no_q.write_text("name: no_q\ndescription: d\nsystem: s\nuser: Tell me something.\n")
    with pytest.raises(TemplateError, match=r"no \{question\} placeholder"):
        render(str(no_q), {"question": "q", "answer": "a"}, "qa")
    with pytest.raises(TemplateError, match=r"\{question\} is not available for text rows"):
        render("tofu_qa", {"prompt": "", "continuation": "t"}, "text")
    typo = tmp_path / "typo.yaml"
    typo.write_text("name: typo\nuser: 'Question: {questoin}'\n")
    with pytest.raises(TemplateError, match=r"typo.yaml: unknown placeholder \{questoin\}"):
        load_template(typo)
    no_user = tmp_path / "no_user.yaml"
    no_user.write_text("name: x\nsystem: s\n")
    with pytest.raises(TemplateError, match="missing required field 'user'"):
        load_template(no_user)
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(TemplateError, match="bad.yaml: invalid YAML"):
        load_template(bad)
    with pytest.raises(TemplateError, match="unknown template 'nope'.*tofu_qa"):
        load_template("nope")
    with pytest.raises(TemplateError, match="does not exist"):
        load_template(str(tmp_path / "missing.yaml"))
    # other braces (a JSON example) are left alone
    ok = tmp_path / "json.yaml"
    ok.write_text('user: "Reply as {\\"answer\\": \\"...\\"} to {question}"\n')
    assert render(ok, {"question": "Q?", "answer": "a"}, "qa")[0]["content"] == (
        'Reply as {"answer": "..."} to Q?')


# --------------------------------------------------------------------------------------------
# Registry


def test_registry_idk_and_errors():
    assert BACKENDS == {"retrieval", "openai", "local", "idk"}
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(3)]
    seen = []
    result = generate_normals("idk", rows, "qa", 4, seed=1, progress=lambda d, t: seen.append(d))
    assert isinstance(result, GenerationResult)
    assert result.complete and len(result.table) == 9 and seen[-1] == 3
    assert result.counts_by_source() == {"idk": 9}
    with pytest.raises(ValueError, match="unknown normals backend 'gpt'"):
        generate_normals("gpt", rows, "qa", 4)
    with pytest.raises(ValueError, match="has no option 'threshold'"):
        generate_normals("idk", rows, "qa", 4, threshold=0.3)
    with pytest.raises(ValueError, match="needs retain_rows"):
        generate_normals("retrieval", rows, "qa", 4)


# --------------------------------------------------------------------------------------------
# Retrieval

FORGET = [
    {"question": "What is the capital city of France?",
     "answer": "The capital of France is Paris."},
    {"question": "How do you bake sourdough bread at home?",
     "answer": "Mix flour, water and a starter, let the dough rise overnight, then bake it hot."},
    {"question": "Who won the football World Cup in 2014?",
     "answer": "Germany won the 2014 FIFA World Cup, beating Argentina in the final."},
]
RETAIN = [
    {"question": "Which country hosted the 2014 football World Cup?",
     "answer": "Brazil hosted the 2014 FIFA World Cup."},
    {"question": "What ingredients does sourdough bread need?",
     "answer": "Sourdough bread needs flour, water, salt and a starter culture."},
    {"question": "Which city is the capital of France?",
     "answer": "Paris is the capital city of France."},
    {"question": "What do giant pandas eat?", "answer": "Giant pandas eat mostly bamboo."},
    {"question": "What is the boiling point of water at sea level?",
     "answer": "Water boils at 100 degrees Celsius at sea level."},
    {"question": "Which river flows through Paris, France?",
     "answer": "The Seine flows through Paris, the French capital."},
]


@pytest.mark.slow
def test_retrieval_picks_nearest_neighbours():
    import numpy as np

    from sga_core.normals.retrieval import embedding_text, load_embedding_model

    seen = []
    result = generate_normals("retrieval", FORGET, "qa", 3, retain_rows=RETAIN, threshold=0.3,
                              progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (9, 9)
    first = {d["forget_index"]: d["retain_index"] for d in result.details if d["k"] == 1}
    assert first == {0: 2, 1: 1, 2: 0}
    assert result.table.get(0, 1).text == RETAIN[2]["answer"]
    assert result.table.get(0, 1).source == "retrieval"
    model = load_embedding_model()
    f = model.encode([embedding_text(r, "qa") for r in FORGET], normalize_embeddings=True)
    r = model.encode([embedding_text(r, "qa") for r in RETAIN], normalize_embeddings=True)
    cos = f @ r.T
    for i in range(len(FORGET)):
        mine = [d for d in result.details if d["forget_index"] == i]
        scores = [d["score"] for d in sorted(mine, key=lambda d: d["k"])]
        assert scores == sorted(scores, reverse=True)
        assert all(-1.0 <= s <= 1.0 and s > 0.3 for s in scores)
        for d in mine:
            assert d["score"] == pytest.approx(float(cos[i, d["retain_index"]]), abs=1e-4)
            assert result.table.get(i, d["k"]).score == d["score"]
        # retrieved answers come first; IDK templates fill the rest
        sources = [result.table.get(i, k).source for k in (1, 2)]
        assert sources == sorted(sources, key=lambda s: s != "retrieval")
    assert result.complete and np.all(np.abs(cos) <= 1.0001)


@pytest.mark.slow
def test_retrieval_threshold_falls_back_to_idk_and_skips_own_answer():
    from sga_core.assets import idk_templates as load_idk_templates

    result = generate_normals("retrieval", FORGET, "qa", 4, retain_rows=RETAIN, threshold=0.99)
    assert result.details == [] and result.complete
    assert all(a.source == "idk" and a.score is None for a in result.table.answers)
    assert all(a.text in load_idk_templates() for a in result.table.answers)
    # a forget row that also sits in the retain set never gets its own answer back
    retain = RETAIN + [dict(FORGET[0])]
    result = generate_normals("retrieval", FORGET, "qa", 4, retain_rows=retain, threshold=0.2)
    assert all(d["retain_index"] != len(RETAIN) for d in result.details)
    assert FORGET[0]["answer"] not in result.table.texts_for(0)


@pytest.mark.slow
def test_retrieval_text_rows_use_continuations():
    forget = [{"prompt": "The recipe for sourdough", "continuation": "needs a lively starter."}]
    retain = [
        {"prompt": "Baking bread with", "continuation": "sourdough starter takes two days."},
        {"prompt": "", "continuation": "The stock market fell sharply on Monday."},
    ]
    result = generate_normals("retrieval", forget, "text", 2, retain_rows=retain, threshold=0.2)
    assert result.table.get(0, 1).text == "sourdough starter takes two days."
    assert result.details[0]["retain_index"] == 0


@pytest.mark.slow
def test_text_retrieval_gives_the_nearest_passages_with_scores_below_the_threshold():
    """News passages sit far apart (cosine well below 0.5): for text, the nearest retain
    passages are used anyway, each with its cosine, instead of "I don't know" for every
    article; "I don't know" is a choice."""
    forget = [{"prompt": "Greek Prime Minister Kyriakos Mitsotakis said on Sunday",
               "continuation": "that 57 people were hurt when two trains collided."}]
    retain = [{"prompt": "", "continuation": "The central bank raised interest rates."},
              {"prompt": "", "continuation": "Rail unions called a strike over safety."},
              {"prompt": "", "continuation": "A new museum opened in Lisbon."}]
    result = generate_normals("retrieval", forget, "text", 3, retain_rows=retain,
                              threshold=0.95)
    answers = sorted(result.table.answers, key=lambda a: a.k)
    assert [a.source for a in answers] == ["retrieval", "retrieval"]
    assert all(a.score is not None and a.score < 0.95 for a in answers)
    assert answers[0].score >= answers[1].score  # best first
    assert all(d["below_threshold"] for d in result.details)
    idk = generate_normals("retrieval", forget, "text", 3, retain_rows=retain,
                           threshold=0.95, below_threshold="idk")
    assert {a.source for a in idk.table.answers} == {"idk"}
    # QA keeps the paper's TOFU recipe: "I don't know" below the threshold
    qa = generate_normals("retrieval", FORGET, "qa", 4, retain_rows=RETAIN, threshold=0.99)
    assert {a.source for a in qa.table.answers} == {"idk"}
    with pytest.raises(ValueError, match="below_threshold must be one of"):
        generate_normals("retrieval", forget, "text", 3, retain_rows=retain,
                         below_threshold="sometimes")


def test_text_template_continues_with_different_facts():
    row = {"prompt": "Greek police said on Sunday", "continuation": "that 57 were hurt."}
    system, user = render("text_different_facts", row, "text")
    assert "different facts" in user["content"] and "Greek police said on Sunday" in \
        user["content"] and "that 57 were hurt." in user["content"]
    assert system["role"] == "system" and "different facts" in system["content"]


# --------------------------------------------------------------------------------------------
# OpenAI backend against a local OpenAI-compatible server (tests/helpers/openai_server.py)


def qa_rows(*tags: str) -> list[dict]:
    return [{"question": f"Who is author [{t}]?", "answer": f"a {t}"} for t in tags]


def run_openai(server, rows, k=4, **kw):
    kw.setdefault("api_key", "sk-test-key")
    kw.setdefault("retry_base_delay", 0.001)
    kw.setdefault("timeout", 5.0)
    return generate_normals("openai", rows, "qa", k, base_url=server.base_url, **kw)


def test_openai_success_and_tokens(fake_openai):
    seen = []
    result = run_openai(fake_openai, qa_rows("a", "b", "c"), model="my-model",
                        progress=lambda d, t: seen.append((d, t)))
    assert result.errors == {} and result.complete
    assert len(result.table) == 9
    assert {a.source for a in result.table.answers} == {"openai"}
    assert result.table.get(1, 3).text == "normal answer 2 for b"
    assert fake_openai.hits == {"a": 1, "b": 1, "c": 1}  # one request with n=3 per row
    assert fake_openai.n_seen["a"] == [3]
    assert result.tokens == {"prompt": 30, "completion": 18, "total": 48}
    assert seen[0] == (0, 3) and seen[-1] == (3, 3)
    assert fake_openai.auth == {"Bearer sk-test-key"}


def test_openai_retries_rate_limit(fake_openai):
    result = run_openai(fake_openai, qa_rows("429", "ok"))
    assert result.errors == {} and result.complete
    assert fake_openai.hits["429"] == 2  # one 429, then success
    assert result.table.get(0, 1).text == "normal answer 0 for 429"


def test_openai_timeout_is_a_row_error(fake_openai):
    result = run_openai(fake_openai, qa_rows("ok1", "timeout", "ok2"), timeout=0.4,
                        max_retries=1, max_concurrency=3)
    assert set(result.errors) == {1}
    assert "gave up after 2 attempts" in result.errors[1]
    assert "Timeout" in result.errors[1]
    assert fake_openai.hits["timeout"] == 2
    assert result.table.texts_for(0) and result.table.texts_for(2)
    assert result.table.texts_for(1) == []
    assert not result.complete


def test_openai_malformed_replies_are_row_errors(fake_openai):
    rows = qa_rows("empty", "nonjson", "html", "blank", "ok")
    result = run_openai(fake_openai, rows, max_concurrency=2)
    assert set(result.errors) == {0, 1, 2, 3}
    assert "no choices" in result.errors[0]
    assert "not valid JSON" in result.errors[1]
    assert "not a chat completion" in result.errors[2]
    assert "no content" in result.errors[3]
    assert len(result.table.texts_for(4)) == 3
    assert all(fake_openai.hits[t] == 1 for t in ("empty", "nonjson", "html", "blank"))
    summary = "\n".join(result.summary_lines())
    assert "4 forget rows failed" in summary


def test_openai_fewer_choices_and_rejected_n(fake_openai):
    result = run_openai(fake_openai, qa_rows("one"))
    assert result.errors == {}
    assert result.table.texts_for(0) == [f"normal answer 0 for one-{i}" for i in (1, 2, 3)]
    assert fake_openai.n_seen["one"] == [3, 2, 1]  # asks for what is still missing
    # a server that rejects n > 1 is asked one answer per request
    result = run_openai(fake_openai, qa_rows("no-n"))
    assert result.errors == {} and len(result.table.texts_for(0)) == 3
    assert fake_openai.n_seen["no-n"] == [3, 1, 1, 1]


def test_openai_needs_a_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        generate_normals("openai", qa_rows("a"), "qa", 4, base_url="http://127.0.0.1:9/v1")


def test_api_key_never_leaks(fake_openai, tmp_path, monkeypatch, caplog, capsys):
    from sga_core.cli import main
    from sga_core.normals.openai_backend import scrub

    caplog.set_level(logging.DEBUG)
    key = f"sk-test-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    # a run through the library, the table saved
    result = run_openai(fake_openai, qa_rows("a", "429"), api_key=None)
    assert result.complete
    result.table.save(tmp_path / "normals.jsonl")
    # servers that echo the key back in errors: the messages are scrubbed
    bad = run_openai(fake_openai, qa_rows("echo500", "echo401", "later"), api_key=None,
                     max_retries=1, max_concurrency=1)
    assert set(bad.errors) == {0, 1, 2}
    assert "gave up after 2 attempts" in bad.errors[0]
    assert "AuthenticationError (HTTP 401)" in bad.errors[1]
    # a rejected key stops the rows not yet sent: they would fail alike
    assert bad.errors[2] == bad.errors[1] and "later" not in fake_openai.hits
    # the command line, key from the environment
    forget = tmp_path / "forget.jsonl"
    forget.write_text("".join(json.dumps(r) + "\n" for r in qa_rows("x", "y", "empty")))
    rc = main(["normals", "--backend", "openai", "--forget", str(forget), "--k", "3",
               "--base-url", fake_openai.base_url, "--out", str(tmp_path / "cli.jsonl")])
    assert rc == 1  # one row failed; the others were written
    assert len(NormalTable.load(tmp_path / "cli.jsonl")) == 4
    out, err = capsys.readouterr()
    assert "row 2:" in out and "tokens: prompt" in out
    assert fake_openai.auth == {f"Bearer {key}"}
    texts = [out, err, caplog.text, json.dumps(bad.errors), json.dumps(result.summary())]
    texts += [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()]
    for text in texts:
        assert key not in text and key[:16] not in text and key[-8:] not in text
    assert scrub(f"Authorization: Bearer {key}", None) == "Authorization: Bearer ***"
    assert key not in scrub(f"bad key {key}", key)


# --------------------------------------------------------------------------------------------
# Local model


@pytest.mark.slow
def test_local_backend_tiny_model(tiny_model_dir):
    rows = qa_rows("a", "b", "c")
    seen = []
    opts = dict(model=str(tiny_model_dir), max_new_tokens=6, batch_size=2, seed=3)
    result = generate_normals("local", rows, "qa", 3, progress=lambda d, t: seen.append(d),
                              **opts)
    assert result.errors == {} and result.complete
    for i in range(3):
        texts = result.table.texts_for(i)
        assert len(texts) == 2 and all(t.strip() for t in texts)
    assert {a.source for a in result.table.answers} == {"local"}
    assert seen[-1] == 3
    again = generate_normals("local", rows, "qa", 3, **opts)  # fixed seed: same answers
    assert [a.text for a in again.table.answers] == [a.text for a in result.table.answers]
    text_rows = [{"prompt": "Lucien Marchetti was born", "continuation": "in Lyon."}]
    text = generate_normals("local", text_rows, "text", 2, **opts)
    assert text.complete and text.table.get(0, 1).source == "local"


@pytest.mark.slow
def test_local_backend_at_temperature_0_is_greedy(speaking_tiny_model_dir):
    """Temperature 0 decodes greedily (generate would refuse to sample at 0): every slot
    holds the one greedy answer, and a second generation gives it again."""
    rows = qa_rows("a", "b")
    opts = dict(model=str(speaking_tiny_model_dir), max_new_tokens=8, temperature=0.0)
    greedy = generate_normals("local", rows, "qa", 3, **opts)
    assert greedy.errors == {} and greedy.complete
    for i in range(2):
        first, second = greedy.table.texts_for(i)
        assert first == second and first.strip()
    again = generate_normals("local", rows, "qa", 3, **{**opts, "seed": 7})
    assert [a.text for a in again.table.answers] == [a.text for a in greedy.table.answers]


# --------------------------------------------------------------------------------------------
# Command line


@pytest.mark.slow
def test_cli_retrieval_on_demo(tmp_path, demo_dir):
    out = tmp_path / "normals.jsonl"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "sga_core", "normals", "--backend", "retrieval",
         "--forget", str(demo_dir / "forget.jsonl"), "--retain", str(demo_dir / "retain.jsonl"),
         "--k", "4", "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    n = len(load_dataset(demo_dir / "forget.jsonl"))
    table = NormalTable.load(out)
    assert table.k == 4 and table.is_complete(n) and len(table) == 3 * n
    assert {a.source for a in table.answers} <= {"retrieval", "idk"}
    assert "by source:" in proc.stdout and "progress:" in proc.stderr
    for a in table.answers:
        assert (a.score is not None) == (a.source == "retrieval")


def test_generation_job_saves_into_the_newest_table(tmp_path):
    """The job merges its rows into the table as it is when it finishes: an edit made while
    it ran (another row) is kept, and the table before is a version in the history."""
    from sga_core.data import NormalAnswer, NormalTable
    from sga_core.fileio import atomic_write_json
    from sga_core.normals import job
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.projects import jobs as bgjob

    project = create_demo_project(root=tmp_path / "ws")
    project.save_normals(idk_normals(10, 4), "seed")
    d = bgjob.job_dir(project, job.NAME)
    d.mkdir()
    atomic_write_json(d / "spec.json", {"backend": "idk", "k": 4, "options": {"seed": 7},
                                        "rows": [1]})
    atomic_write_json(d / "status.json", {"state": "running"})

    def edit_row0(t):  # the user edits row 0 while the job runs
        kept = [a for a in t.answers if a.forget_index != 0]
        return NormalTable(kept + [NormalAnswer(0, j, f"mine {j}", "manual", None, True)
                                   for j in (1, 2, 3)], t.k)

    project.update_normals(edit_row0, "edit row 0")
    before = project.normals()
    assert job.main([str(project.path)]) == 0
    after = project.normals()
    st = bgjob.status(project, job.NAME)
    assert st["state"] == "completed" and st["applied"] and st["stage"] is None
    assert after.texts_for(0) == ["mine 1", "mine 2", "mine 3"]  # the edit survived
    assert all(after.texts_for(i) == before.texts_for(i) for i in range(2, 10))
    assert all(a.source == "idk" for a in after.answers if a.forget_index == 1)
    history = project.history()
    assert st["version"] == history[0].name and "generate-idk-row-1" in history[0].name
    assert NormalTable.load(history[1]).texts_for(0) == ["mine 1", "mine 2", "mine 3"]
