"""Tests for the invented demo corpus (tools/demo_corpus.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools import demo_corpus as demo

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "assets" / "demo"


@pytest.fixture(scope="module")
def splits():
    return demo.build_demo()


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_write_demo_is_deterministic_and_matches_shipped_copy(tmp_path):
    a = demo.write_demo(tmp_path / "a")
    b = demo.write_demo(tmp_path / "b")
    assert set(a) == set(b)
    assert sorted(p.name for p in a.values()) == sorted(demo.DEMO_FILES)
    for name, path in a.items():
        data = path.read_bytes()
        assert data == b[name].read_bytes(), name
        shipped = SHIPPED / path.name
        assert shipped.exists(), f"missing shipped file {shipped}"
        assert data == shipped.read_bytes(), (
            f"{shipped} is stale: regenerate with python -m tools.demo_corpus assets/demo"
        )
    # no temporary files left behind
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(demo.DEMO_FILES)


def test_written_files_round_trip(tmp_path, splits):
    paths = demo.write_demo(tmp_path)
    for name, rows in splits.items():
        assert _read(paths[name]) == rows
    readme = paths["README"].read_text(encoding="utf-8")
    assert "invented" in readme and "demo-data" in readme


def test_author_counts_and_row_ids(splits):
    assert len(demo.AUTHORS) >= 12
    names = [a["name"] for a in demo.AUTHORS]
    assert len(set(names)) == len(names)
    qa = splits["forget"] + splits["retain"]
    assert len(qa) == 10 * len(demo.AUTHORS)
    for name in names:
        assert sum(r["author"] == name for r in qa) == 10
    ids = [r["id"] for r in qa]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"a\d\d-q\d\d", i) for i in ids)


def test_forget_is_one_author_and_retain_disjoint(splits):
    forget, retain = splits["forget"], splits["retain"]
    assert len(forget) == 10
    assert {r["author"] for r in forget} == {demo.FORGET_AUTHOR}
    assert demo.FORGET_AUTHOR not in {r["author"] for r in retain}
    assert len({r["author"] for r in retain}) == len(demo.AUTHORS) - 1
    assert not {r["id"] for r in forget} & {r["id"] for r in retain}
    assert not {r["question"] for r in forget} & {r["question"] for r in retain}


def test_qa_rows_have_paraphrase_and_five_distinct_perturbed(splits):
    assert splits["forget"] and splits["retain"]  # the loop below checks every row
    for r in splits["forget"] + splits["retain"]:
        assert r["question"].strip() and r["answer"].strip(), r["id"]
        assert r["paraphrased_answer"].strip(), r["id"]
        assert r["paraphrased_answer"] != r["answer"], r["id"]
        wrong = r["perturbed_answer"]
        assert len(wrong) == 5 and len(set(wrong)) == 5, r["id"]
        assert r["answer"] not in wrong and r["paraphrased_answer"] not in wrong, r["id"]
        assert all(w.strip() for w in wrong), r["id"]


def test_qa_rows_are_short(splits):
    assert splits["forget"] and splits["retain"]  # the loop below checks every row
    for r in splits["forget"] + splits["retain"]:
        assert 6 <= len(r["question"].split()) <= 16, r["id"]
        assert 8 <= len(r["answer"].split()) <= 22, r["id"]


def test_author_facts_are_consistent(splits):
    # every row that mentions a birth city names the author's own city
    cities = {a["name"]: a["city"] for a in demo.AUTHORS}
    assert len(cities) > 1 and splits["forget"] and splits["retain"]  # checked below
    for r in splits["forget"] + splits["retain"]:
        for other, city in cities.items():
            if other != r["author"]:
                assert city not in r["answer"], (r["id"], city)
                assert city not in r["paraphrased_answer"], (r["id"], city)


def test_french_row(splits):
    forget = splits["forget"]
    assert 0 <= demo.FRENCH_ROW < len(forget)
    row = forget[demo.FRENCH_ROW]
    assert row["answer"] == demo.FRENCH_ANSWER
    assert "French" in row["answer"].split()
    assert "French" in row["paraphrased_answer"]
    assert all("French" not in w for w in row["perturbed_answer"])
    assert sum("French" in r["answer"] for r in forget) >= 2
    # the word is distinctive: no retain answer uses it
    assert not any("French" in r["answer"] for r in splits["retain"])


def test_real_world_sets(splits):
    for name in ("real_authors", "world_facts"):
        rows = splits[name]
        assert len(rows) == 20
        assert len({r["question"] for r in rows}) == 20
        for r in rows:
            assert r["question"].strip() and r["answer"].strip()
            wrong = r["perturbed_answer"]
            assert len(wrong) >= 4 and len(set(wrong)) == len(wrong)
            assert r["answer"] not in wrong
    assert splits["real_authors"][0]["answer"] == "William Shakespeare wrote Romeo and Juliet."
    assert splits["world_facts"][0]["answer"] == "The capital of France is Paris."


def test_text_splits(splits):
    assert len(splits["text_forget"]) == 10
    assert len(splits["text_retain"]) == 20
    assert len(splits["text_holdout"]) == 10
    for name in ("text_forget", "text_retain", "text_holdout"):
        for r in splits[name]:
            assert r["prompt"].strip() and r["continuation"].strip(), r["id"]
            assert f"{r['prompt']} {r['continuation']}" == " ".join(r["text"].split())
            assert 40 <= len(r["text"].split()) <= 70, r["id"]
    assert {r["author"] for r in splits["text_forget"]} == {demo.FORGET_AUTHOR}
    assert demo.FORGET_AUTHOR not in {r["author"] for r in splits["text_retain"]}
    holdout = {r["text"] for r in splits["text_holdout"]}
    trained = {r["text"] for r in splits["text_forget"] + splits["text_retain"]}
    assert not holdout & trained
    known = {a["name"] for a in demo.AUTHORS}
    assert not {r["author"] for r in splits["text_holdout"]} & known
    for name in ("text_forget_qa", "text_retain_qa"):
        rows = splits[name]
        assert len(rows) == 5
        assert all(r["question"].strip() and r["answer"].strip() for r in rows)


def test_idk_templates():
    templates = demo.load_idk_templates()
    assert len(templates) >= 40
    assert len(set(templates)) == len(templates)
    for t in templates:
        assert t.strip()
        assert 6 <= len(t.split()) <= 20, t
    assert demo.IDK_TEMPLATES_PATH == REPO / "assets" / "idk_templates.json"
