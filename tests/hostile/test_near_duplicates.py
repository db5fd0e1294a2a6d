"""Rows that differ only in how the same text is encoded read as one row to a person and to
the model: 'Café' written with a combining accent (NFD) or with a zero-width space or a
soft hyphen inside a word. The repeated-forget-row and forget-in-retain warnings see them
as the same row; rows that really differ are still told apart."""

from __future__ import annotations

from sga_core.data.row_warnings import row_warnings

NFC, NFD = "Who founded the Caf\u00e9 Lumi\u00e8re?", "Who founded the Cafe\u0301 Lumie\u0300re?"


def qa(question: str, answer: str = "Ada.") -> dict:
    return {"question": question, "answer": answer}


def test_the_same_text_in_other_code_points_is_one_row():
    forget = [qa(NFC), qa(NFD), qa("Where is\u200b Paris?")]
    retain = [qa("Where is Paris?"), qa("Who wrote\u00ad it?")]
    warnings = row_warnings("qa", forget + [qa("Who wrote it?")], retain)
    text = " | ".join(warnings)
    assert "row 2 (= row 1)" in text, text
    assert "forget row 3 (= retain row 1)" in text and "4 (= retain row 2)" in text, text


def test_rows_that_differ_are_not_warned_about():
    assert row_warnings("qa", [qa(NFC), qa("Who founded the Cafe Lumiere?")],
                        [qa(NFC, "Bob.")]) == []
