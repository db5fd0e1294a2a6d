"""A field mapping onto a field every row needs (question, answer, text) must name a field the
file has: ``--map Prompt=question`` on a file whose field is ``prompt`` is refused, naming the
mapping, the file's fields and the near miss, instead of failing later with "missing
'question'". Mapping onto an optional field from a field the file lacks stays allowed, so one
mapping serves TOFU files with and without perturbed answers."""

from __future__ import annotations

import json

import pytest

from sga_core.data import DataError, load_dataset
from sga_core.data.mapping import apply_map


def test_a_needed_field_mapped_from_a_missing_field_names_the_near_miss():
    rows = [{"prompt": "q?", "response": "a."}]
    with pytest.raises(DataError) as exc:
        apply_map(rows, {"Prompt": "question", "response": "answer"}, "f.jsonl")
    text = str(exc.value)
    assert "field mapping Prompt=question: no row has a field 'Prompt'" in text
    assert "'prompt', 'response'" in text and "did you mean 'prompt'?" in text
    assert exc.value.file == "f.jsonl" and exc.value.field == "Prompt"


def test_no_near_miss_no_hint():
    with pytest.raises(DataError) as exc:
        apply_map([{"q": "x", "a": "y"}], {"content": "text"})
    assert "did you mean" not in str(exc.value) and "'q', 'a'" in str(exc.value)


def test_an_optional_field_may_be_mapped_from_a_missing_field():
    rows = [{"prompt": "q?", "response": "a."}]
    out = apply_map(rows, {"prompt": "question", "response": "answer",
                           "perturbed_response": "perturbed_answer"})
    assert out == [{"question": "q?", "answer": "a."}]


def test_the_loader_refuses_before_reading_any_row(tmp_path):
    path = tmp_path / "forget.jsonl"
    path.write_text("".join(json.dumps({"prompt": f"q{i}?", "response": f"a{i}."}) + "\n"
                            for i in range(3)))
    with pytest.raises(DataError, match="did you mean 'prompt'"):
        load_dataset(path, field_map={"Prompt": "question", "response": "answer"})
    assert len(load_dataset(path, field_map={"prompt": "question", "response": "answer"})) == 3


def test_a_qa_file_without_its_answer_field_names_the_files_own_fields(tmp_path):
    """'query' mapped to question, the answer under a name not mapped: the message says
    what a QA row lacks and lists the fields as the file has them (found in a new-user
    trial: it said "cannot tell the data kind" and named 'question', which the file lacks)."""
    path = tmp_path / "f.jsonl"
    path.write_text(json.dumps({"query": "q?", "said": "a."}) + "\n")
    with pytest.raises(DataError) as exc:
        load_dataset(path, field_map={"query": "question"})
    text = str(exc.value)
    assert "a QA row needs an 'answer' besides its 'question'" in text
    assert "the file's fields: 'said', 'query' (read as 'question')" in text
    assert "--map FIELD=answer" in text and "cannot tell" not in text


def test_reply_is_offered_for_the_answer():
    from sga_core.data.mapping import suggest_map

    assert suggest_map(["query", "reply"], "qa") == {"query": "question", "reply": "answer"}
