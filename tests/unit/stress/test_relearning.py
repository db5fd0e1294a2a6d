"""Relearning (sga_core.stress.relearning) on the tiny model: the run's own model files stay
byte-identical, the fine-tuned copy is gone afterwards unless kept, and the rows trained on
never overlap the rows re-scored."""

from __future__ import annotations

from pathlib import Path

import pytest

from sga_core.stress import StressSettings
from sga_core.stress.base import seeded_rows
from tests.helpers.stress import file_hashes, tiny_run

FAST = dict(seeds=[0, 1], relearn_steps=[1, 2], rouge=False, relearn_lr=1e-2)


@pytest.fixture()
def run_with_model(runs_dir, tiny_model_dir, demo_dir) -> Path:
    """A run folder whose model/ is the tiny model (no training needed to attack it)."""
    return tiny_run(runs_dir, tiny_model_dir, demo_dir, "tiny-stress")


@pytest.mark.parametrize("n,share", [(10, 0.1), (10, 0.5), (3, 0.9), (40, 0.1), (2, 0.1)])
def test_attack_rows_never_overlap_the_evaluated_rows(n, share):
    from sga_core.stress import StressContext
    from sga_core.stress.attacks.relearn import Relearn

    class Enc:  # training_rows only pairs each row's question and answer
        @staticmethod
        def qa(q, a):
            return (q, a)

    Ctx = StressContext(None, Enc, [{"question": f"q{i}", "answer": f"a{i}"} for i in range(n)],
                        [], StressSettings(relearn_share=share))

    for seed in range(5):
        used = seeded_rows(n, share, seed)
        assert 1 <= len(used) <= n - 1
        attack_set, rows, seqs, evaluated = Relearn().training_rows(Ctx, seed)
        assert attack_set == "forget" and rows == used and len(seqs) == len(used)
        assert not set(rows) & set(evaluated)
        assert sorted(rows + evaluated) == list(range(n))
    with pytest.raises(ValueError, match="at least 2"):
        seeded_rows(1, 0.5, 0)


def test_relearning_leaves_the_run_model_byte_identical_and_drops_the_copy(run_with_model):
    from sga_core.runs.folder import STRESS_DIR, STRESS_KEPT
    from sga_core.stress.run import stress_run

    before = file_hashes(run_with_model / "model")
    results = stress_run(run_with_model, ["relearn", "benign"], StressSettings(**FAST))
    assert file_hashes(run_with_model / "model") == before
    out = run_with_model / STRESS_DIR
    assert sorted(p.name for p in out.iterdir()) == [
        "benign-1.json", "benign-2.json", "relearn-1.json", "relearn-2.json"]
    assert not (out / STRESS_KEPT).exists()
    for key in ("relearn-1", "relearn-2"):
        cases = results[key]["cases"]
        assert [c["seed"] for c in cases] == [0, 1]
        for c in cases:
            assert c["attack_rows"] and c["eval_rows"]
            assert not set(c["attack_rows"]) & set(c["eval_rows"])
            assert c["attack_set"] == "forget"
        # the samples are the evaluated rows, never the attack rows
        for s in results[key]["samples"]:
            assert s["index"] not in cases[s["case"]]["attack_rows"]
    # the copy did learn: after 2 steps at a high rate the attacked rows' scores moved
    r2 = results["relearn-2"]["cases"][0]["metrics"]["probability"]
    assert r2["attacked"] != r2["unlearned"]
    for c in results["benign-2"]["cases"]:
        assert c["attack_set"] == "retain" and c["eval_rows"] == list(range(10))


def test_keep_saves_the_relearned_copy_beside_the_results(run_with_model):
    from sga_core.model.loading import is_model_folder
    from sga_core.runs.folder import STRESS_DIR, STRESS_KEPT
    from sga_core.stress.run import stress_run

    before = file_hashes(run_with_model / "model")
    stress_run(run_with_model, ["relearn"],
               StressSettings(**{**FAST, "seeds": [3], "keep": True}))
    kept = run_with_model / STRESS_DIR / STRESS_KEPT / "relearn-seed3"
    assert is_model_folder(kept)
    assert file_hashes(run_with_model / "model") == before
    assert file_hashes(kept) != before
