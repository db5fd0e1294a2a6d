"""The token Token probabilities follows first: the demo's word, else the largest fall from
the Original to an unlearning run, else the first token that shows something (a new user with
only the Retained evaluated was shown token 0, a blank one: "p('') = 0.001")."""

from __future__ import annotations

from sga_core.report.run_files import default_token


def table(tokens, probs):
    return {"tokens": tokens, "probs": probs}


def test_the_word_then_the_largest_fall_then_the_first_visible_token():
    tokens = ["", " Harry", " walked", " French"]
    original = table(tokens, [0.5, 0.9, 0.9, 0.9])
    sga = table(tokens, [0.5, 0.9, 0.3, 0.8])
    retained = table(tokens, [0.5, 0.0, 0.9, 0.9])
    assert default_token([original, sga], "French") == 3
    assert default_token([original, sga, retained], None, [False, True, False]) == 2
    assert default_token([original, sga, retained]) == 1  # counted as a run: the Retained's
    assert default_token([retained]) == 1  # alone: the first token that is not blank
    assert default_token([table([" ", "\n"], [0.1, 0.2])]) == 0
