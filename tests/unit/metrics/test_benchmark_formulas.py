"""Every TOFU and MUSE metric (and the copyright task's) against a hand computation from the
published formula, on identical per-sample inputs, within 1e-4: through the catalog's compute
functions under each protocol's settings, so the wiring (denominators, epsilons, stemming)
is what is checked, not only the pure functions.

References: TOFU (locuslab/tofu evaluate_util.py, config/eval_everything.yaml),
open-unlearning (src/evals/metrics/memorization.py, privacy.py, utils.py, mia/),
MUSE (swj0419/muse_bench eval.py, metrics/*.py), FLAT (UCSC-REAL/FLAT evaluate.py).
"""

from __future__ import annotations

import math

import pytest

from sga_core.metrics import catalog
from sga_core.metrics.catalog import QA, TEXT, spec_of
from sga_core.metrics.context import MetricInputs, SetData
from sga_core.metrics.result import MetricResult
from sga_core.protocols import PROTOCOLS, get_protocol

TOL = 1e-4
TOFU = get_protocol("tofu").settings() | {"name": "tofu"}
DEMO = get_protocol("demo").settings() | {"name": "demo"}
MUSE = get_protocol("muse").settings() | {"name": "muse"}

# identical per-sample inputs: mean answer NLLs of each candidate of 3 QA rows
NLLS = [
    {"answer": 0.5, "paraphrased": 0.8, "perturbed": [1.5, 2.0, 2.5]},
    {"answer": 1.2, "paraphrased": 1.0, "perturbed": [1.1, 0.9]},
    {"answer": 0.1, "paraphrased": 0.3, "perturbed": [3.0, 3.0, 4.0]},
]


def compute(name: str, kind: str, sets: dict[str, SetData], options: dict, on=None,
            results=None, reference=None, self_reference=False) -> MetricResult:
    spec = spec_of(name, kind)
    on = on or tuple(s if s not in catalog.WILDCARDS else "real_authors" for s in spec.on)
    return spec.compute(MetricInputs(name, sets, on, dict(results or {}), reference, None,
                                     self_reference, options))


def qa_set(name: str, nlls=NLLS, **fields) -> SetData:
    rows = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(len(nlls))]
    return SetData(name, rows, list(range(len(rows))), nlls=list(nlls), **fields)


# --- hand formulas (TOFU paper section 2.5 / open-unlearning memorization.py) -------------

def tr_exact(row, denom):  # TOFU: exp(mean perturbed loss - base answer loss)
    pert = sum(row["perturbed"]) / len(row["perturbed"])
    return math.exp(row[denom] - pert)


def tr_eps(row, denom):  # open-unlearning: exp(-mean wrong) / (exp(-correct) + 1e-10)
    pert = sum(row["perturbed"]) / len(row["perturbed"])
    return math.exp(-pert) / (math.exp(-row[denom]) + 1e-10)


def test_probability_is_the_mean_of_exp_minus_nll():
    want = sum(math.exp(-r["answer"]) for r in NLLS) / 3
    res = compute("forget_probability", QA, {"forget": qa_set("forget")}, TOFU)
    assert res.value == pytest.approx(want, abs=TOL)


@pytest.mark.parametrize("options, eps", [(DEMO, 0.0), (TOFU, 1e-10)])
def test_normalized_probability_of_a_real_world_set(options, eps):
    want = []
    for r in NLLS:
        a = math.exp(-r["answer"])
        want.append(a / (a + sum(math.exp(-p) for p in r["perturbed"]) + eps))
    res = compute("real_authors_probability", QA, {"real_authors": qa_set("real_authors")},
                  options)
    assert res.value == pytest.approx(sum(want) / 3, abs=TOL)
    assert res.per_sample == pytest.approx(want, abs=TOL)


def test_truth_ratio_scores_use_tofu_denominators():
    sets = {n: qa_set(n) for n in ("forget", "retain", "real_authors")}
    # forget: the paraphrase; mean(min(TR, 1/(TR + eps)))
    trs = [tr_eps(r, "paraphrased") for r in NLLS]
    res = compute("forget_truth_ratio", QA, sets, TOFU)
    assert res.per_sample == pytest.approx(trs, rel=TOL)
    assert res.value == pytest.approx(sum(min(t, 1 / (t + 1e-10)) for t in trs) / 3, abs=TOL)
    # retain: the paraphrase; mean(max(0, 1 - TR))
    res = compute("retain_truth_ratio", QA, sets, TOFU)
    assert res.value == pytest.approx(sum(max(0, 1 - t) for t in trs) / 3, abs=TOL)
    # real-world sets: TOFU's base_answer_key is the ANSWER, even where a paraphrase exists
    trs_ra = [tr_eps(r, "answer") for r in NLLS]
    res = compute("real_authors_truth_ratio", QA, sets, TOFU)
    assert res.per_sample == pytest.approx(trs_ra, rel=TOL)
    assert res.value == pytest.approx(sum(max(0, 1 - t) for t in trs_ra) / 3, abs=TOL)
    # the demo keeps the paraphrase wherever a row has one, in the log domain
    res = compute("real_authors_truth_ratio", QA, sets, DEMO)
    assert res.per_sample == pytest.approx([tr_exact(r, "paraphrased") for r in NLLS],
                                           rel=TOL)


def tr_prob_mean(row, denom, eps):  # open-unlearning, aggregator prob_mean:
    correct = math.exp(-row[denom])  # correct / (correct + wrong + 1e-10), then np.mean
    wrong = math.exp(-sum(row["perturbed"]) / len(row["perturbed"]))
    return correct / (correct + wrong + eps)


@pytest.mark.parametrize("options, eps", [(TOFU, 1e-10), (DEMO, 0.0)])
def test_prob_mean_truth_ratio_is_open_unlearnings(options, eps):
    """The third aggregator, beside closer_to_1_better and true_better, on each set with its
    protocol's denominator (the paraphrase on forget/retain, the answer on real-world sets
    under ``tofu``)."""
    sets = {n: qa_set(n) for n in ("forget", "retain", "real_authors")}
    for name, denom in (("forget", "paraphrased"), ("retain", "paraphrased"),
                        ("real_authors", "answer" if options is TOFU else "paraphrased")):
        want = [tr_prob_mean(r, denom, eps) for r in NLLS]
        res = compute(f"{name}_truth_ratio_prob_mean", QA, sets, options)
        print(f"{name}_truth_ratio_prob_mean (eps {eps:g}): max |row - OU's| = "
              f"{max(abs(a - b) for a, b in zip(res.per_sample, want)):.2e}")
        assert res.per_sample == pytest.approx(want, abs=TOL), name
        assert res.value == pytest.approx(sum(want) / 3, abs=TOL), name
    collapsed = [{"answer": 100.0, "paraphrased": 100.0, "perturbed": [90.0, 90.0]}]
    res = compute("forget_truth_ratio_prob_mean", QA, {"forget": qa_set("forget", collapsed)},
                  options)
    assert res.value == pytest.approx(tr_prob_mean(collapsed[0], "paraphrased", eps), abs=TOL)


def test_epsilon_on_a_collapsed_model_gives_the_references_numbers():
    """A collapsed model: every NLL huge. open-unlearning's 1e-10 dominates the tiny
    probabilities, so the truth ratio goes to ~0 (retain score 1); TOFU's own log-domain
    ratio keeps exp(100 - 90) (retain score 0)."""
    collapsed = [{"answer": 100.0, "paraphrased": 100.0, "perturbed": [90.0, 90.0]}]
    sets = {n: qa_set(n, collapsed) for n in ("forget", "retain", "real_authors")}
    tr_ou = math.exp(-90.0) / (math.exp(-100.0) + 1e-10)  # 8.2e-30
    res = compute("retain_truth_ratio", QA, sets, TOFU)
    assert res.per_sample[0] == pytest.approx(tr_ou, rel=TOL)
    assert res.value == pytest.approx(1.0 - tr_ou, abs=TOL)
    res = compute("forget_truth_ratio", QA, sets, TOFU)
    assert res.value == pytest.approx(min(tr_ou, 1 / (tr_ou + 1e-10)), abs=TOL)
    exact = compute("retain_truth_ratio", QA, sets, DEMO)
    assert exact.per_sample[0] == pytest.approx(math.exp(10.0), rel=TOL)
    assert exact.value == 0.0
    norm = compute("real_authors_probability", QA, sets, TOFU)
    a = math.exp(-100.0)
    assert norm.value == pytest.approx(a / (a + 2 * math.exp(-90.0) + 1e-10), abs=TOL)


def test_forget_quality_is_the_ks_p_value_and_invariant_to_1_over_tr():
    from scipy.stats import ks_2samp

    own = [0.2, 0.5, 0.9, 1.4]
    ref = [0.6, 0.8, 1.1, 1.6, 2.0]
    forget = qa_set("forget")
    res = compute("forget_quality", QA, {"forget": forget}, TOFU,
                  results={"forget_truth_ratio": MetricResult("x", 0.5, own)}, reference=ref)
    # the KS statistic by hand: the largest gap between the two empirical CDFs
    pts = sorted(own + ref)
    d = max(abs(sum(v <= x for v in own) / 4 - sum(v <= x for v in ref) / 5) for x in pts)
    assert res.per_sample[0] == pytest.approx(d, abs=TOL)
    # TOFU tests 1/TR (exp(pert - para)), open-unlearning's utils.py 1/(TR + 1e-10): a
    # monotone map of both samples leaves the p-value unchanged
    inv = ks_2samp([1 / (t + 1e-10) for t in own], [1 / (t + 1e-10) for t in ref]).pvalue
    assert res.value == pytest.approx(inv, abs=TOL)


def test_forget_quality_says_first_that_the_forget_rows_have_no_truth_ratios():
    """Own data without perturbed answers: FQ's reason is that, not the missing retain
    reference (a new-user trial read 'prepare the project's models' for a project whose
    Data page said the perturbed answers were missing)."""
    from sga_core.metrics.result import missing

    forget = qa_set("forget")
    none = missing("forget_truth_ratio", "no perturbed answers", [None] * 3)
    res = compute("forget_quality", QA, {"forget": forget}, TOFU,
                  results={"forget_truth_ratio": none}, reference=None)
    assert res.value is None and res.reason == "no forget truth ratios (no perturbed answers)"


def test_model_utility_is_the_harmonic_mean_of_nine():
    vals = [0.9, 0.5, 0.4, 0.8, 0.7, 0.6, 0.3, 0.95, 0.45]
    results = {k: MetricResult(k, v) for k, v in zip(catalog.tofu.MODEL_UTILITY_KEYS, vals)}
    res = compute("model_utility", QA, {}, TOFU, on=(), results=results)
    assert res.value == pytest.approx(9 / sum(1 / v for v in vals), abs=TOL)


def test_rouge_l_recall_and_f1_by_hand():
    # reference 5 words, prediction 4 words, LCS "the cat on mat" = 4
    pred, gold = "the cat lay on mat", "the cat sat on the mat"
    d = SetData("forget", [{}], [0], generated=[pred], gold=[gold])
    recall = compute("forget_rouge", QA, {"forget": d}, TOFU)
    assert recall.value == pytest.approx(4 / 6, abs=TOL)
    p, r = 4 / 5, 4 / 6
    f1 = compute("forget_verbmem", TEXT, {"forget": d}, MUSE)
    assert f1.value == pytest.approx(2 * p * r / (p + r), abs=TOL)


def test_muse_scores_rouge_without_stemming_and_tofu_with():
    d = SetData("forget", [{}], [0], generated=["cats running"], gold=["cat run"])
    assert compute("forget_verbmem", TEXT, {"forget": d}, MUSE).value == 0.0
    assert compute("forget_verbmem", TEXT, {"forget": d}, DEMO).value == pytest.approx(1.0)


def test_extraction_strength_and_exact_memorization_by_hand():
    hits = [[True, True, True, True],  # all predicted: ES 1, EM 1
            [False, True, True, True],  # suffix from k=1: ES 1 - 1/4, EM 3/4
            [True, False, False, True, True],  # suffix from k=3: ES 1 - 3/5, EM 3/5
            [True, True, False]]  # no suffix (last token missed): k stops at n-1, ES 1/3
    d = SetData("forget", [{}] * 4, list(range(4)), hits=hits)
    for kind in (QA, TEXT):
        es = compute("forget_extraction_strength", kind, {"forget": d}, TOFU)
        assert es.per_sample == pytest.approx([1.0, 0.75, 0.4, 1 / 3], abs=TOL)
        em = compute("forget_exact_memorization", kind, {"forget": d}, TOFU)
        assert em.per_sample == pytest.approx([1.0, 0.75, 0.6, 2 / 3], abs=TOL)
        assert em.value == pytest.approx((1 + 0.75 + 0.6 + 2 / 3) / 4, abs=TOL)


LOGPROBS_F = [[-0.1, -0.2, -3.0, -0.05, -0.3], [-0.4, -0.5, -0.6]]
LOGPROBS_H = [[-2.0, -2.5, -1.0, -3.5, -0.9], [-1.5, -0.2, -2.2]]


def min_k(lp, k=0.4):  # open-unlearning mia/min_k.py, negated back: mean of the lowest k
    n = max(1, int(len(lp) * k))
    return sum(sorted(lp)[:n]) / n


def test_min_k_auc_by_hand():
    sets = {"forget": SetData("forget", [{}] * 2, [0, 1], logprobs=LOGPROBS_F),
            "holdout": SetData("holdout", [{}] * 2, [0, 1], logprobs=LOGPROBS_H)}
    f = [min_k(lp) for lp in LOGPROBS_F]
    h = [min_k(lp) for lp in LOGPROBS_H]
    pairs = [(1.0 if a > b else 0.5 if a == b else 0.0) for a in f for b in h]
    res = compute("mia_auc", TEXT, sets, MUSE)
    assert res.value == pytest.approx(sum(pairs) / len(pairs), abs=TOL)
    assert res.per_sample == pytest.approx(f + h, abs=TOL)


@pytest.mark.parametrize("auc_u, auc_ref, want", [
    (0.98, 0.47, ((1 - 0.98) - (1 - 0.47)) / (1 - 0.47) * 100),  # memorised: about -96.2
    (0.47, 0.47, 0.0),  # the retrained model itself
    (0.30, 0.47, ((1 - 0.30) - (1 - 0.47)) / (1 - 0.47) * 100),  # over-unlearned: > 0
])
def test_privleak_in_muses_convention(auc_u, auc_ref, want):
    res = compute("privleak", TEXT, {}, MUSE, on=("forget", "holdout"),
                  results={"mia_auc": MetricResult("mia_auc", auc_u)}, reference=auc_ref)
    assert res.value == pytest.approx(want, abs=TOL)
    if auc_u == 0.98:
        assert res.value == pytest.approx(-96.2264, abs=TOL)  # the example


def test_privleak_against_a_given_retrained_auc():
    """eval.retrained_auc replaces the reference's AUC (MUSE's AUC_RETRAIN for News,
    forget_holdout_Min-40% = 0.4772 in MUSE's convention, is 1 - 0.4772 here)."""
    res = compute("privleak", TEXT, {}, MUSE | {"retrained_auc": 1 - 0.4772},
                  on=("forget", "holdout"), results={"mia_auc": MetricResult("m", 1.0)},
                  reference=0.5)
    assert res.value == pytest.approx((0.0 - 0.4772) / 0.4772 * 100, abs=TOL)  # -100


def test_perplexity_is_token_weighted():
    d = SetData("holdout", [{}] * 2, [0, 1], logprobs=LOGPROBS_H)
    flat = [x for lp in LOGPROBS_H for x in lp]
    res = compute("holdout_perplexity", TEXT, {"holdout": d}, MUSE)
    assert res.value == pytest.approx(math.exp(-sum(flat) / len(flat)), rel=TOL)


def test_bleu_rouge_and_fq_gap_of_the_copyright_task():
    copyright_opts = get_protocol("copyright").settings() | {"name": "copyright"}
    # BLEU by hand: 4 of 5 reference words, all n-grams match: precisions 1, brevity
    # penalty exp(1 - 5/4)
    d = SetData("forget", [{}] * 2, [0, 1], completions=["a b c d", "x y z w v"],
                gold=["a b c d e", "x y z w v"])
    bleu = compute("forget_bleu", TEXT, {"forget": d}, copyright_opts)
    want = [100 * math.exp(1 - 5 / 4), 100.0]
    assert bleu.per_sample == pytest.approx(want, abs=TOL)
    rouge = compute("forget_completion_rouge", TEXT, {"forget": d}, copyright_opts)
    assert rouge.value == pytest.approx((4 / 5 + 1) / 2, abs=TOL)
    results = {"forget_bleu": bleu, "forget_completion_rouge": rouge}
    gap = compute("fq_gap", TEXT, {"forget": d}, copyright_opts, results=results,
                  reference={"bleu": 50.0, "rouge": 0.2})
    assert gap.value == pytest.approx(abs(bleu.value - 50) + abs(rouge.value - 0.2), abs=TOL)
    same = compute("fq_gap", TEXT, {"forget": d}, copyright_opts, results=results,
                   self_reference=True)
    assert same.value == 0.0


def test_every_catalog_entry_names_its_reference_and_every_protocol_its_source():
    assert catalog.problems() == []
    for spec in catalog.CATALOG:
        assert any(w in spec.reference for w in ("TOFU", "MUSE", "open-unlearning", "FLAT",
                                                 "lm-evaluation-harness")), spec.name
    for p in PROTOCOLS.values():
        assert p.reference and p.describe()
    assert "not comparable" in get_protocol("demo").describe()
