"""A retain model's published open-unlearning eval logs as the reference
(sga_core/evaluation/ou_logs.py): files written as OU's Evaluator writes them
(tests/helpers/ou_logs.py, a port of OU at d3d7cf9e), read into the values Forget Quality
and PrivLeak need, with OU's own ks_test / privleak / mia_auc arithmetic fed the same inputs
(agreement to 1e-4), and a clear error for each way a log can be the wrong one."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from sga_core.evaluation.ou_logs import (
    LogError,
    attack_auc,
    attack_aucs,
    read_logs,
    truth_ratios,
)
from sga_core.evaluation.reference import cached_value, reference_value, resolve_reference
from sga_core.metrics import muse, tofu
from tests.helpers import ou_logs as ou

N = 40  # TOFU forget01's size


def qa_rows(n: int = N) -> list[dict]:
    return [{"question": f"Who wrote book {i}?", "answer": f"Book {i} was written by "
             f"author number {i * 7}."} for i in range(n)]


def nlls(seed: int, n: int = N, shift: float = 0.0) -> tuple[list, list]:
    rng = random.Random(seed)
    para = [rng.uniform(0.3, 3.0) + shift for _ in range(n)]
    pert = [[rng.uniform(0.3, 3.0) for _ in range(5)] for _ in range(n)]
    return para, pert


@pytest.fixture()
def tofu_log(tmp_path):
    para, pert = nlls(1)
    logs = ou.tofu_logs(qa_rows(), para, pert)
    eval_file, summary = ou.write_ou_logs(tmp_path / "tofu_retain99", "TOFU", logs,
                                          ["forget_quality", "forget_truth_ratio",
                                           "forget_Q_A_ROUGE"])
    return eval_file, summary, logs


def test_the_file_has_ou_s_layout(tofu_log):
    """The fixture is what OU writes: string row keys, sorted metric names, per-row
    records under value_by_index, the summary's aggregates only."""
    eval_file, summary, _ = tofu_log
    raw = json.loads(eval_file.read_text())
    assert list(raw) == sorted(raw)
    assert list(raw["forget_truth_ratio"]["value_by_index"])[:3] == ["0", "1", "2"]
    assert set(raw["forget_Q_A_PERT_Prob"]["value_by_index"]["0"]) == {"prob", "avg_loss"}
    assert len(raw["forget_Q_A_PERT_Prob"]["value_by_index"]["0"]["prob"]) == 5
    assert set(raw["forget_Q_A_ROUGE"]["value_by_index"]["3"]) == {
        "rouge1_recall", "rougeL_f1", "rougeL_recall", "input", "ground_truth", "generation"}
    assert set(json.loads(summary.read_text())) == {"forget_truth_ratio", "forget_Q_A_ROUGE"}


def test_forget_quality_from_the_log_equals_ou_s(tofu_log):
    """The log's truth ratios are the workbench's per-row forget_truth_ratio of the same
    NLLs, and Forget Quality against them equals OU's ks_test (privacy.py) against the same
    retain log."""
    eval_file, _, logs = tofu_log
    got = truth_ratios(read_logs(eval_file), qa_rows())
    para, pert = nlls(1)
    mine = tofu.truth_ratio(pert, para).per_sample
    tr_diff = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(got, mine))
    assert tr_diff < 1e-4
    u_para, u_pert = nlls(2, shift=0.4)  # an unlearned model's NLLs
    unl = ou.tofu_logs(qa_rows(), u_para, u_pert)["forget_truth_ratio"]
    ou_fq = ou.ks_test(unl, logs["forget_truth_ratio"])["agg_value"]
    fq = tofu.forget_quality(tofu.truth_ratio(u_pert, u_para).per_sample, got).value
    assert abs(fq - ou_fq) < 1e-4, (fq, ou_fq)
    print(f"max diff: truth ratios {tr_diff:.2e}, forget quality {abs(fq - ou_fq):.2e}")


def test_a_subset_of_rows_takes_those_rows(tofu_log):
    eval_file, _, logs = tofu_log
    rows = qa_rows()
    picked = [0, 13, 26, 39]
    got = truth_ratios(read_logs(eval_file), [rows[i] for i in picked], picked)
    assert got == pytest.approx([logs["forget_truth_ratio"]["value_by_index"][i]["score"]
                                 for i in picked])


def test_training_reads_every_row_through_cached_value(tofu_log):
    eval_file, _, logs = tofu_log
    ref = resolve_reference(str(eval_file.parent))  # OU's saves/eval/<model>/ folder
    assert ref.logs == eval_file and ref.model is None and ref.problem is None
    values = cached_value(ref, "forget_truth_ratios", "any key")
    assert len(values) == N and values[5] == pytest.approx(
        logs["forget_truth_ratio"]["value_by_index"][5]["score"])


def test_wrong_logs_are_refused_saying_why(tofu_log, tmp_path):
    eval_file, summary, logs = tofu_log
    # another split: forget01's log against a forget05-sized project
    with pytest.raises(LogError, match=r"40 forget truth ratios \(TOFU forget01 \(retain99\)\)"
                                       r".*200 rows \(TOFU forget05"):
        truth_ratios(read_logs(eval_file), qa_rows(200))
    # the same count, other rows (another order)
    shuffled = qa_rows()[::-1]
    with pytest.raises(LogError, match="row 0's answer .* other rows"):
        truth_ratios(read_logs(eval_file), shuffled)
    # a summary has no per-row values
    with pytest.raises(LogError, match="a summary holds only aggregates: give TOFU_EVAL"):
        truth_ratios(read_logs(summary), qa_rows())
    # MUSE's log for a QA project
    muse_file = ou.save_logs({"forget_knowmem_ROUGE": {"agg_value": 0.1,
                                                       "value_by_index": {}}},
                             tmp_path / "m" / "MUSE_EVAL.json")
    with pytest.raises(LogError, match="MUSE's evaluation log.*QA \\(TOFU\\) project"):
        truth_ratios(read_logs(muse_file), qa_rows())
    # a TOFU log renamed to MUSE_EVAL.json
    renamed = tmp_path / "r" / "MUSE_EVAL.json"
    renamed.parent.mkdir()
    renamed.write_text(eval_file.read_text())
    with pytest.raises(LogError, match="named for MUSE but holds TOFU"):
        read_logs(renamed)
    # the prob_mean truth ratio is another quantity
    para, pert = nlls(1)
    pm = ou.save_logs(ou.tofu_logs(qa_rows(), para, pert, aggregator="prob_mean"),
                      tmp_path / "pm" / "TOFU_EVAL.json")
    with pytest.raises(LogError, match="prob_mean"):
        truth_ratios(read_logs(pm), qa_rows())
    # rows missing from the log
    gappy = json.loads(eval_file.read_text())
    del gappy["forget_truth_ratio"]["value_by_index"]["7"]
    gap_file = ou.save_logs(gappy, tmp_path / "gap" / "TOFU_EVAL.json")
    with pytest.raises(LogError, match=r"not 0\.\.38 \(missing 7\)"):
        truth_ratios(read_logs(gap_file), qa_rows(39))
    bad = tmp_path / "bad" / "TOFU_EVAL.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    with pytest.raises(LogError, match="TOFU_EVAL.json is not valid JSON"):
        read_logs(bad)
    both = tmp_path / "both"
    ou.save_logs(logs, both / "TOFU_EVAL.json")
    ou.save_logs({"mia_min_k": {"agg_value": 0.5}}, both / "MUSE_EVAL.json")
    assert "both TOFU and MUSE" in resolve_reference(str(both)).problem


def token_lps(seed: int, n: int, shift: float) -> list[list[float]]:
    rng = random.Random(seed)
    return [[-rng.uniform(0.05, 6.0) + shift for _ in range(rng.randint(8, 30))]
            for _ in range(n)]


def test_privleak_from_a_muse_log_equals_ou_s(tmp_path):
    """The retain model's Min-K% AUC from MUSE_EVAL.json (mia_min_k) is the workbench's
    ``mia_auc`` of the same token log-probs, and PrivLeak against it equals OU's privleak;
    a subset of rows takes the AUC of those rows' scores."""
    forget, holdout = token_lps(3, 30, 0.0), token_lps(4, 25, 0.3)
    retain_mia = ou.mia_min_k(forget, holdout)
    logs = {"mia_min_k": retain_mia, "privleak": ou.privleak(retain_mia["agg_value"], None),
            "forget_knowmem_ROUGE": {"agg_value": 0.2, "value_by_index": {}}}
    eval_file, summary = ou.write_ou_logs(tmp_path / "muse_retrain", "MUSE", logs,
                                          ["privleak", "mia_min_k"])
    got = attack_auc(read_logs(eval_file), "mia_auc", 30, 25)
    mine = muse.auc([muse.min_k_percent(lp) for lp in forget],
                    [muse.min_k_percent(lp) for lp in holdout]).value
    auc_diff = abs(got - mine)
    assert auc_diff < 1e-4 and got == pytest.approx(retain_mia["auc"])
    assert attack_auc(read_logs(summary), "mia_auc", 30, 25) == pytest.approx(got)
    u_forget = token_lps(5, 30, 1.0)  # an unlearned model that still remembers
    u_auc = ou.mia_min_k(u_forget, holdout)["agg_value"]
    ou_pl = ou.privleak(u_auc, retain_mia["agg_value"])["agg_value"]
    pl = muse.privleak(u_auc, got).value
    assert abs(pl - ou_pl) < 1e-4, (pl, ou_pl)
    picked = {"forget": [0, 4, 9, 20], "holdout": [1, 2, 24]}
    sub = attack_auc(read_logs(eval_file), "mia_auc", 4, 3, picked)
    scores = ([retain_mia["forget"]["value_by_index"][str(i)]["score"]
               for i in picked["forget"]] + [retain_mia["holdout"]["value_by_index"][str(i)]
                                             ["score"] for i in picked["holdout"]])
    assert sub == pytest.approx(roc_auc_score(np.array([0] * 4 + [1] * 3), scores))
    print(f"max diff: AUC {auc_diff:.2e}, privleak {abs(pl - ou_pl):.2e}")
    with pytest.raises(LogError, match="scored 30 forget texts, the project has 12"):
        attack_auc(read_logs(eval_file), "mia_auc", 12, 25)
    with pytest.raises(LogError, match="no mia_zlib result"):
        attack_auc(read_logs(eval_file), "mia_zlib_auc", 30, 25)
    assert attack_aucs(read_logs(eval_file), 30, 25) == {"mia_auc": got}
    # a value the log does not give is never computed on a model (there is none to load)
    ref = resolve_reference(str(eval_file))

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded for an eval-log reference")

    info = reference_value(ref, "mia_aucs", "k", lambda m, t: 1.0, load=no_load)
    assert info["value"] is None and "is an eval log without mia_aucs" in info["reason"]


def test_a_logs_attacks_are_the_references_auc_for_each_privleak(tmp_path, tofu_log):
    """A TOFU log with OU's attacks beside its truth ratios gives each attack's AUC as the
    reference's MIA value (each PrivLeak takes its own; a QA project's too), and a log
    without Min-K%'s says what it lacks."""
    from sga_core.evaluation.ou_logs import logs_mia_reference

    forget, holdout = token_lps(3, N, 0.0), token_lps(4, 25, 0.3)
    mia_min_k = ou.mia_min_k(forget, holdout)
    loss = {"agg_value": 0.61}  # OU's summary form of another attack
    _, _, logs = tofu_log
    eval_file, _ = ou.write_ou_logs(tmp_path / "tofu_with_mia", "TOFU",
                                    {**logs, "mia_min_k": mia_min_k, "mia_loss": loss},
                                    ["forget_quality", "mia_min_k", "mia_loss"])
    ref = resolve_reference(str(eval_file))
    holdout_rows = qa_rows(25)
    got = logs_mia_reference(ref, "qa", qa_rows(), holdout_rows)
    assert got["reason"] is None, got
    assert got["value"] == {"aucs": {"min_k": pytest.approx(mia_min_k["auc"]),
                                     "loss": pytest.approx(0.61)}}
    assert cached_value(ref, "mia_aucs", "any key") == got["value"]
    # a TOFU log for a text project, and a log without mia_min_k, say why
    assert "TOFU_EVAL.json" in logs_mia_reference(ref, "text", qa_rows(), holdout_rows)[
        "reason"]
    bare, _ = ou.write_ou_logs(tmp_path / "tofu_bare", "TOFU", logs, ["forget_quality"])
    why = logs_mia_reference(resolve_reference(str(bare)), "qa", qa_rows(), holdout_rows)
    assert got["value"] is not None and "holds no mia_min_k" in why["reason"], why
