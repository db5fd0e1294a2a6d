"""WMDP import: the corpora as the project's text data, the question sets and MMLU as its
evaluation sets, under the ``wmdp`` protocol; from a folder of the published files, or
through ``datasets`` (its loader replaced here by a reader of the same rows); the gated bio
forget corpus reported when it is absent, the rest imported. Nothing downloads.

The fixtures have the published shape: ``cais/wmdp``'s parquet shards
``wmdp-<part>/test-00000-of-00001.parquet`` (answer int64, question string, choices
list<string>), ``cais/mmlu``'s ``all/test-00000-of-00001.parquet`` (question, subject,
choices, answer), and the corpora as WMDP's RMU code and open-unlearning read them
(``cyber-forget-corpus.jsonl`` ..., one ``{"text"}`` per line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sga_core.data import DataError
from sga_core.data.hub import HubError
from sga_core.projects.benchmarks import import_with
from sga_core.projects.wmdp import import_wmdp

QUESTIONS = {
    "wmdp-bio": [{"answer": i % 4, "question": f"Which agent is bio item {i}?",
                  "choices": ["A virus", "A toxin", "A vector", "A host"]} for i in range(3)],
    "wmdp-cyber": [{"answer": (i + 1) % 4, "question": f"What does exploit {i} do?",
                    "choices": ["Overflows", "Leaks", "Escalates", "Nothing"]}
                   for i in range(4)],
}
MMLU = [{"question": f"Anatomy question {i}?", "subject": "anatomy",
         "choices": ["Femur", "Humerus", "Tibia", "Radius"], "answer": i % 4} for i in range(3)]
CORPORA = {
    "cyber-forget-corpus": [{"text": f"Exploit write-up {i}: a heap overflow in a parser."}
                            for i in range(5)],
    "cyber-retain-corpus": [{"text": f"Network course notes {i}: routing and TCP."}
                            for i in range(4)],
    "bio-retain-corpus": [{"text": f"Biology review {i}: cell membranes and proteins."}
                          for i in range(3)],
}
BIO_FORGET = [{"text": f"Gated bio paper {i}."} for i in range(2)]


def _parquet(path: Path, rows: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture()
def folder(tmp_path) -> Path:
    d = tmp_path / "wmdp-files"
    for config, rows in QUESTIONS.items():
        _parquet(d / config / "test-00000-of-00001.parquet", rows)
    _parquet(d / "all" / "test-00000-of-00001.parquet", MMLU)
    for config, rows in CORPORA.items():
        d.mkdir(exist_ok=True)
        _jsonl(d / f"{config}.jsonl", rows)
    return d


def texts(rows: list[dict]) -> list[str]:
    return [r.get("text") or r["continuation"] for r in rows]


def test_a_folder_imports_a_ready_wmdp_project(folder, tmp_path):
    p = import_with("wmdp", None, {"from_folder": str(folder)}, root=tmp_path / "ws")
    assert p.name == "wmdp-cyber" and p.kind == "text"
    assert p.meta["protocol"] == "wmdp" and p.meta["variant"] == "cyber"
    assert texts(p.forget()) == texts(CORPORA["cyber-forget-corpus"])
    assert texts(p.retain()) == texts(CORPORA["cyber-retain-corpus"])
    assert set(p.eval_sets()) == {"wmdp_bio", "wmdp_cyber", "mmlu"}
    from sga_core.data import load_dataset

    bio = load_dataset(p.eval_sets()["wmdp_bio"])
    assert bio.kind == "mc" and bio.rows == [
        {"answer": r["answer"], "question": r["question"], "choices": r["choices"]}
        for r in QUESTIONS["wmdp-bio"]]
    assert load_dataset(p.eval_sets()["mmlu"]).rows[0]["subject"] == "anatomy"
    notes = "\n".join(p.meta["import_notes"])
    assert "wmdp-chem" in notes and "no WMDP-chem accuracy" in notes


def test_bio_and_cyber_without_the_gated_corpus_imports_the_rest_and_says_so(folder,
                                                                             tmp_path):
    p = import_wmdp(None, subset="bio+cyber", folder=folder, root=tmp_path / "ws")
    assert texts(p.forget()) == texts(CORPORA["cyber-forget-corpus"])
    assert texts(p.retain()) == texts(CORPORA["bio-retain-corpus"] +
                                      CORPORA["cyber-retain-corpus"])
    notes = "\n".join(p.meta["import_notes"])
    assert "gated" in notes and "bio-forget-corpus.jsonl" in notes
    # with the file it is requested under, the bio forget texts come first
    _jsonl(folder / "bio-forget-corpus.jsonl", BIO_FORGET)
    p = import_wmdp("both", subset="bio+cyber", folder=folder, root=tmp_path / "ws")
    assert texts(p.forget()) == texts(BIO_FORGET + CORPORA["cyber-forget-corpus"])


def test_bio_alone_without_its_forget_corpus_is_refused_naming_the_fix(folder, tmp_path):
    with pytest.raises(HubError) as err:
        import_wmdp(None, subset="bio", folder=folder, root=tmp_path / "ws")
    msg = str(err.value)
    assert "gated" in msg and "cais/wmdp-bio-forget-corpus" in msg
    assert "bio-forget-corpus.jsonl" in msg
    assert not (tmp_path / "ws" / "wmdp-bio").exists()
    with pytest.raises(HubError, match="strict"):
        import_wmdp(None, folder=folder, root=tmp_path / "ws", strict=True)


def test_through_datasets_each_part_is_asked_for_as_published(tmp_path, monkeypatch):
    from sga_core.data import hub

    served = {("cais/wmdp", c, "test"): rows for c, rows in QUESTIONS.items()}
    served[("cais/mmlu", "all", "test")] = MMLU
    served.update({("cais/wmdp-corpora", c, "train"): rows for c, rows in CORPORA.items()})
    asked = []

    def fake_hub_rows(repo, config, split):
        asked.append((repo, config, split))
        if (repo, config, split) not in served:  # as datasets says it (gated, or absent)
            raise FileNotFoundError(f"Dataset '{repo}' is a gated dataset on the Hub.")
        return served[(repo, config, split)]

    monkeypatch.setattr(hub, "hub_rows", fake_hub_rows)
    p = import_wmdp(None, subset="bio+cyber", root=tmp_path / "ws")
    assert {("cais/wmdp", "wmdp-bio", "test"), ("cais/wmdp", "wmdp-cyber", "test"),
            ("cais/wmdp", "wmdp-chem", "test"), ("cais/mmlu", "all", "test"),
            ("cais/wmdp-corpora", "cyber-forget-corpus", "train"),
            ("cais/wmdp-corpora", "bio-retain-corpus", "train"),
            ("cais/wmdp-bio-forget-corpus", "default", "train")} <= set(asked)
    assert p.meta["benchmark_source"] == "the local HF cache"
    assert texts(p.forget()) == texts(CORPORA["cyber-forget-corpus"])
    assert "gated" in "\n".join(p.meta["import_notes"])


def test_a_bad_question_row_names_its_file_row_and_field(folder, tmp_path):
    rows = [dict(QUESTIONS["wmdp-cyber"][0], answer=7)]
    _parquet(folder / "wmdp-cyber" / "test-00000-of-00001.parquet", rows)
    with pytest.raises(DataError) as err:
        import_wmdp(None, folder=folder, root=tmp_path / "ws")
    assert "wmdp-cyber/test-00000-of-00001.parquet" in str(err.value)
    assert "answer" in str(err.value) and "not one of the 4 choices" in str(err.value)
    assert not (tmp_path / "ws" / "wmdp-cyber").exists()


def test_a_corpus_without_texts_is_refused_naming_it(folder, tmp_path):
    _jsonl(folder / "cyber-retain-corpus.jsonl", [{"content": "not the published field"}])
    with pytest.raises(DataError, match="cyber-retain-corpus.jsonl.*'text'"):
        import_wmdp(None, folder=folder, root=tmp_path / "ws")
    assert not (tmp_path / "ws" / "wmdp-cyber").exists()
