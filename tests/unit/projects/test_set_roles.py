"""Set roles that say what they do: the words come from the role registry and the metric
catalog under the project's protocol; a name that gives a role is confirmed (library
``confirm_role``, CLI ``--confirm-role``), never silently taken; a forget_eval whose passages
are not in the trained forget set is warned about with the count."""

from __future__ import annotations

import json

import pytest

from sga_core.assets import DEMO_DIR
from sga_core.cli import main
from sga_core.projects import ProjectError, create_project, load_project
from sga_core.projects.eval_sets import role_words
from sga_core.protocols import SET_ROLES


@pytest.mark.parametrize("name, protocol, words", [
    ("forget_eval", "muse", "replaces the forget rows for VerbMem and PrivLeak"),
    ("holdout", "muse", "holdout for MIA AUC, PrivLeak and PPL"),
    ("holdout", "copyright", "holdout for PPL"),
    ("forget_qa", "muse", "forget_qa for KnowMem forget"),
    ("forget_qa_icl", "muse", "few-shot examples for KnowMem forget"),
    ("forget_qa_icl", "demo", "(not used: the demo protocol asks zero-shot)"),
])
def test_role_words_follow_the_catalog_and_the_protocol(name, protocol, words):
    assert words in role_words("text", name, protocol)


def test_every_registered_role_has_words_and_plain_names_have_none():
    for name, role in SET_ROLES.items():
        for kind in role.kinds:
            assert role_words(kind, name, "demo"), (name, kind)
    assert role_words("text", "my_passages") is None
    assert role_words("qa", "my_questions") is None
    # holdout is a role of QA projects too (TOFU's holdout split: the attacks' non-members)
    assert role_words("qa", "holdout").startswith("holdout for MIA AUC")


def passages(tmp_path, rows) -> str:
    path = tmp_path / "verbmem.json"
    path.write_text(json.dumps(rows))
    return str(path)


@pytest.fixture
def text_project(tmp_path):
    return create_project("news", DEMO_DIR / "text_forget.jsonl",
                          DEMO_DIR / "text_retain.jsonl", root=tmp_path / "ws")


def from_forget(n: int) -> list[dict]:
    rows = [json.loads(line) for line in (DEMO_DIR / "text_forget.jsonl").read_text()
            .splitlines()]
    return [{"prompt": r["prompt"], "gt": r["continuation"][:80]} for r in rows[:n]]


def test_a_role_name_is_refused_until_confirmed(tmp_path, text_project):
    path = passages(tmp_path, from_forget(3))
    with pytest.raises(ProjectError) as err:
        text_project.add_eval_set("forget_eval", path)
    assert "gives the set a role (replaces the forget rows for VerbMem and PrivLeak" in \
        str(err.value) and "--confirm-role" in str(err.value)
    assert text_project.eval_sets() == {}
    entry = text_project.add_eval_set("forget_eval", path, confirm_role=True)
    assert entry["role"] == "forget_eval" and entry["warning"] is None
    assert "replaces the forget rows" in entry["what"]


def test_passages_not_in_the_forget_set_are_warned_about_with_the_count(tmp_path,
                                                                         text_project):
    rows = from_forget(2) + [{"prompt": "Mitsotakis said on Tuesday", "gt": " that the talks "
                              "would resume."}] * 3
    entry = text_project.add_eval_set("forget_eval", passages(tmp_path, rows),
                                      confirm_role=True)
    assert entry["warning"].startswith("3 of 5 forget_eval passages do not occur in the "
                                       "trained forget set")
    assert "rows 3, 4, 5" in entry["warning"]
    assert any(w.startswith("3 of 5 forget_eval") for w in text_project.data_warnings())


def test_a_long_stretch_counts_as_occurring(tmp_path, text_project):
    row = from_forget(1)[0]
    longer = {"text": "Preface added by an editor. " + row["prompt"] + " " + row["gt"]}
    entry = text_project.add_eval_set("forget_eval", passages(tmp_path, [longer]),
                                      confirm_role=True)
    assert entry["warning"] is None


def test_cli_refuses_a_role_name_without_confirm_role(tmp_path, text_project, capsys):
    ws = str(tmp_path / "ws")
    path = passages(tmp_path, from_forget(2) + [{"prompt": "Elsewhere entirely,", "gt": " x"}])
    rc = main(["project", "add-set", "news", "--workspace", ws, "--set",
               f"forget_eval={path}"])
    err = capsys.readouterr().err
    assert rc == 2 and "gives the set a role" in err and "--confirm-role" in err
    rc = main(["project", "add-set", "news", "--workspace", ws, "--set",
               f"forget_eval={path}", "--confirm-role"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "added forget_eval (3 rows): replaces the forget rows for VerbMem and PrivLeak" in out
    assert "warning: 1 of 3 forget_eval passages do not occur" in out
    rc = main(["project", "create", "other", "--workspace", ws, "--forget",
               str(DEMO_DIR / "text_forget.jsonl"), "--set",
               f"holdout={DEMO_DIR / 'text_holdout.jsonl'}"])
    assert rc == 2 and "holdout for MIA AUC, PrivLeak and PPL" in capsys.readouterr().err
    assert "other" not in [p.name for p in (tmp_path / "ws").iterdir()]
    rc = main(["project", "create", "other", "--workspace", ws, "--forget",
               str(DEMO_DIR / "text_forget.jsonl"), "--set",
               f"holdout={DEMO_DIR / 'text_holdout.jsonl'}", "--confirm-role"])
    assert rc == 0 and set(load_project("other", ws).eval_sets()) == {"holdout"}
