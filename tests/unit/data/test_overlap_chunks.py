"""A VerbMem passage that the import's chunking cut in two still occurs in the trained forget
set (a new user's MUSE-Books study was told, falsely, that one passage of 12 "does not occur
in the trained forget set"); a passage that is in no row is still reported."""

from __future__ import annotations

from sga_core.data.overlap import not_found
from sga_core.projects.eval_sets import forget_overlap_warning

BOOK = ("The owl Hoot157 climbed the seventh staircase at dawn. It counted the steps twice "
        "and rested on the landing.")


def test_a_passage_cut_between_two_chunks_is_found():
    cut = BOOK.index("It counted")
    chunks = [{"text": "Earlier pages. " + BOOK[:cut]}, {"text": BOOK[cut:] + " Later pages."}]
    passage = {"prompt": "The owl Hoot157 climbed the seventh", "gt": " staircase at dawn. It "
               "counted the steps"}
    assert not_found([passage], chunks) == []
    assert forget_overlap_warning([passage], chunks) is None


def test_a_passage_in_no_row_is_reported():
    chunks = [{"text": BOOK}]
    other = {"prompt": "A fox named Red ran", "gt": " over the hill."}
    assert not_found([other], chunks) == [0]
    assert "1 of 1 forget_eval passages do not occur" in forget_overlap_warning([other], chunks)
