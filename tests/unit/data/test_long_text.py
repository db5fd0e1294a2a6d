"""Long raw texts cut as MUSE trains on them: chunks of at most N tokens, cut between words,
nothing lost; a passage that crosses a cut still lies in the two chunks around it."""

from __future__ import annotations

import pytest

from sga_core.data import DataError
from sga_core.data.long_text import chunk_records, chunk_text, needs_cutting
from sga_core.data.overlap import squeeze
from sga_core.projects.benchmark_parts import _spans


@pytest.fixture(scope="module")
def tok(tiny_model_dir):
    from sga_core.model.loading import load_tokenizer

    return load_tokenizer(str(tiny_model_dir))


TEXT = " ".join(f"The keeper of lighthouse {i} counted ships at dawn." for i in range(300))


def test_chunks_hold_at_most_n_tokens_cut_between_words(tok):
    chunks = chunk_text(TEXT, tok, 100)
    assert len(chunks) > 5
    assert squeeze(" ".join(chunks)) == squeeze(TEXT)
    words = set(TEXT.split())
    for c in chunks:
        assert len(tok(c, add_special_tokens=False)["input_ids"]) <= 100
        assert c.split()[0] in words and c.split()[-1] in words  # whole words at both ends


def test_a_text_without_spaces_is_cut_at_token_boundaries(tok):
    chunks = chunk_text("x" * 5000, tok, 64)
    assert "".join(chunks) == "x" * 5000 and len(chunks) > 1


def test_a_passage_across_a_cut_lies_in_both_chunks(tok):
    chunks = chunk_text(TEXT, tok, 100)
    end = chunks[0].split()
    passage = {"prompt": " ".join(end[-4:]), "gt": " " + " ".join(chunks[1].split()[:4])}
    assert _spans(chunks, [passage]) == [(0, 1)]
    assert _spans(chunks, [{"text": "not in the text at all"}]) == [None]


def test_short_texts_need_no_tokenizer_and_stay_whole(tok):
    rows = [{"text": "short"}, {"text": "also short"}]
    assert not needs_cutting(rows, 2048)
    out, cut, _ = chunk_records(rows + [{"text": TEXT, "source": "s"}], tok, 100)
    assert out[:2] == rows and cut == 1 and all(r["source"] == "s" for r in out[2:])


def test_a_chunk_size_below_one_is_refused(tok):
    with pytest.raises(DataError, match="chunk tokens"):
        chunk_text(TEXT, tok, 0)
