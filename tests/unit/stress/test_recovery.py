"""The recovery (sga_core.stress.scoring): 0 for an attack that changes nothing, 1 when the
attacked model is the Original, undefined (with the reason) when the gap is ~0."""

from __future__ import annotations

import pytest

from sga_core.stress.scoring import MIN_GAP, case_metrics, recovery, summarise


def test_identity_attack_recovers_nothing():
    assert recovery(0.2, 0.2, 0.9) == (0.0, None)


def test_attacked_equal_to_the_original_recovers_everything():
    assert recovery(0.9, 0.2, 0.9) == (1.0, None)


def test_recovery_is_the_share_of_the_gap_and_not_clipped():
    assert recovery(0.55, 0.2, 0.9)[0] == pytest.approx(0.5)
    assert recovery(0.1, 0.2, 0.9)[0] == pytest.approx(-1 / 7)
    assert recovery(1.0, 0.2, 0.9)[0] == pytest.approx(8 / 7)


def test_a_gap_near_zero_leaves_the_recovery_undefined_saying_why():
    value, why = recovery(0.5, 0.30, 0.30 + MIN_GAP / 2)
    assert value is None and "gap ~0" in why
    value, why = recovery(None, 0.2, 0.9)
    assert value is None and "attacked" in why


def test_case_metrics_and_summary_over_seeds():
    unl = [{"prob": 0.2, "rouge": 0.1}, {"prob": 0.2, "rouge": 0.1}]
    orig = [{"prob": 0.9, "rouge": 0.9}, {"prob": 0.9, "rouge": 0.9}]
    same = case_metrics(unl, unl, orig)
    back = case_metrics(orig, unl, orig)
    assert same["probability"]["recovery"] == 0.0
    assert back["probability"]["recovery"] == 1.0
    assert back["rouge"]["recovery"] == 1.0
    s = summarise([same, back])
    rec = s["probability"]["recovery"]
    assert rec["n"] == 2 and rec["mean"] == pytest.approx(0.5)
    assert rec["lo"] < 0 < 1 < rec["hi"]  # two far-apart seeds: a wide t interval
    assert s["probability"]["max_recovery"] == 1.0
    assert case_metrics(unl, unl, None)["probability"]["reason"].startswith("no Original")
