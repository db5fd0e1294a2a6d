"""Metrics (docs/spec.md#4-metrics) on small hand-computed cases, and the model-side scoring helpers
on the tiny fixture model."""

from __future__ import annotations

import math

import pytest

from sga_core.metrics import (
    MODEL_UTILITY_KEYS,
    MetricResult,
    auc,
    forget_quality,
    harmonic_mean,
    knowmem,
    min_k_percent,
    min_k_percent_score,
    model_utility,
    normalized_probability,
    perplexity,
    perplexity_from_logprobs,
    privleak,
    probability,
    rouge_l_f1,
    rouge_l_recall,
    truth_ratio,
    truth_ratio_forget_score,
    truth_ratio_retain_score,
    verbmem,
)
from sga_core.metrics.context import split_scores

LN2, LN4 = math.log(2), math.log(4)

# ------------------------------------------------------------------------------------------
# Probability


def test_probability_is_mean_of_exp_minus_nll():
    r = probability([0.0, LN2])
    assert r.per_sample == pytest.approx([1.0, 0.5])
    assert r.value == pytest.approx(0.75)
    assert r.reason is None and r.ok


def test_normalized_probability_by_hand():
    # P(a)=0.5, P(pert)=0.25+0.25 -> 0.5; P(a)=1, P(pert)=0.5 -> 2/3
    r = normalized_probability([LN2, 0.0], [[LN4, LN4], [LN2]])
    assert r.per_sample == pytest.approx([0.5, 2 / 3])
    assert r.value == pytest.approx((0.5 + 2 / 3) / 2)
    # stable for very unlikely answers (no overflow / 0/0)
    far = normalized_probability([2000.0], [[1000.0]])
    assert far.value == pytest.approx(0.0, abs=1e-300)


def test_normalized_probability_without_perturbed_answers():
    r = normalized_probability([0.5], [[]])
    assert r.value is None and r.reason == "no perturbed answers"
    assert r.per_sample == [None]


# ------------------------------------------------------------------------------------------
# Truth ratio


def test_truth_ratio_by_hand_and_direction():
    # row 0 prefers the paraphrase: TR = exp(1 - mean(1, 3)) = e^-1
    # row 1 prefers the perturbed answers: TR = exp(2 - 0.5) = e^1.5 > 1
    r = truth_ratio([[1.0, 3.0], [0.5, 0.5]], [1.0, 2.0])
    assert r.per_sample == pytest.approx([math.exp(-1), math.exp(1.5)])
    assert r.per_sample[0] < 1 < r.per_sample[1]
    # numerator = geometric mean of the perturbed probabilities
    geo = math.sqrt(math.exp(-1.0) * math.exp(-3.0))
    assert r.per_sample[0] == pytest.approx(geo / math.exp(-1.0))


def test_truth_ratio_aggregates_by_hand():
    trs = [2.0, 0.5, 1.0]
    f = truth_ratio_forget_score(trs)
    assert f.per_sample == pytest.approx([0.5, 0.5, 1.0])
    assert f.value == pytest.approx(2 / 3)
    r = truth_ratio_retain_score([0.25, 2.0, 1.0])
    assert r.per_sample == pytest.approx([0.75, 0.0, 0.0])
    assert r.value == pytest.approx(0.25)
    # a MetricResult is accepted; rows that could not be scored (None) are skipped
    tr = truth_ratio([[1.0], [], [2.0]], [1.0, 1.0, 1.0])
    assert tr.per_sample[1] is None
    assert truth_ratio_retain_score(tr).value == pytest.approx((0.0 + (1 - math.exp(-1))) / 2)
    # extremes: TR = 0 or inf count as 0 in the forget score
    assert truth_ratio_forget_score([0.0, math.inf]).value == 0.0


def test_truth_ratio_cannot_compute():
    r = truth_ratio([[], []], [1.0, 2.0])
    assert r.value is None and r.reason == "no perturbed answers"
    assert truth_ratio_forget_score([]).reason == "no truth ratios"
    assert truth_ratio_retain_score([None]).value is None


def test_split_scores_uses_answer_without_paraphrase():
    scores = [{"answer": 1.0, "paraphrased": 2.0, "perturbed": [3.0]},
              {"answer": 4.0, "paraphrased": None, "perturbed": [5.0, 6.0]}]
    ans, denom, pert = split_scores(scores)
    assert ans == [1.0, 4.0] and denom == [2.0, 4.0] and pert == [[3.0], [5.0, 6.0]]


# ------------------------------------------------------------------------------------------
# Forget quality and model utility


def test_forget_quality_ks_pvalue():
    same = [0.1, 0.5, 0.9, 1.3]
    assert forget_quality(same, same).value == pytest.approx(1.0)
    # exact two-sided KS, n = m = 3, D = 1: only 2 of the C(6,3) = 20 splits reach D = 1
    r = forget_quality([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert r.value == pytest.approx(2 / 20)
    assert r.per_sample == pytest.approx([1.0])  # the KS statistic
    shifted = forget_quality([i / 100 for i in range(50)], [10 + i / 100 for i in range(50)])
    assert shifted.value < 1e-10


def test_forget_quality_cannot_compute():
    for ref in (None, [], [None, float("nan")]):
        r = forget_quality([1.0, 2.0], ref)
        assert r.value is None and r.reason == "no retain-reference truth ratios"
    assert forget_quality([], [1.0]).reason == "no truth ratios for the unlearned model"
    ref = MetricResult("truth_ratio", 1.0, [1.0, 2.0, 3.0])
    assert forget_quality(ref, ref).value == pytest.approx(1.0)


def test_harmonic_mean():
    assert harmonic_mean([1, 1, 1, 1, 1, 1, 1, 0.5, 0.25]) == pytest.approx(9 / 13)
    assert harmonic_mean([0.5, 0.0, 0.9]) == 0.0
    with pytest.raises(ValueError):
        harmonic_mean([-1.0, 1.0])


def test_model_utility():
    vals = dict.fromkeys(MODEL_UTILITY_KEYS, 1.0)
    vals["world_facts_truth_ratio"] = 0.5
    vals["retain_rouge"] = 0.25
    r = model_utility(vals)
    assert r.value == pytest.approx(9 / 13)
    assert len(r.per_sample) == 9
    vals["real_authors_probability"] = 0.0
    assert model_utility(vals).value == 0.0
    # nested form and MetricResult components
    nested = {s: {m: MetricResult(m, 0.5) for m in ("probability", "rouge", "truth_ratio")}
              for s in ("retain", "real_authors", "world_facts")}
    assert model_utility(nested).value == pytest.approx(0.5)


def test_model_utility_missing_components():
    vals = dict.fromkeys(MODEL_UTILITY_KEYS, 0.7)
    del vals["world_facts_rouge"]
    vals["retain_probability"] = None
    r = model_utility(vals)
    assert r.value is None
    assert r.reason == "missing components: retain_probability, world_facts_rouge"


# ------------------------------------------------------------------------------------------
# ROUGE


def test_rouge_l_recall_and_f1_by_hand():
    r = rouge_l_recall(["the cat sat"], ["the cat sat on the mat"])
    assert r.per_sample == pytest.approx([0.5]) and r.value == pytest.approx(0.5)
    f = rouge_l_f1(["the cat sat"], ["the cat sat on the mat"])
    assert f.value == pytest.approx(2 * 1.0 * 0.5 / 1.5)
    # stemming on: "cats running" ~ "cat runs"
    assert rouge_l_recall(["Cats running"], ["cat runs"]).value == pytest.approx(1.0)
    mixed = rouge_l_recall(["a b", "x"], ["a b", "y"])
    assert mixed.per_sample == pytest.approx([1.0, 0.0]) and mixed.value == pytest.approx(0.5)
    assert rouge_l_recall([""], ["something"]).value == 0.0


def test_rouge_cannot_compute_and_mismatch():
    assert rouge_l_recall([], []).reason == "no predictions to score"
    with pytest.raises(ValueError):
        rouge_l_f1(["a"], ["a", "b"])


def test_verbmem_and_knowmem_are_rouge_l_f1():
    v = verbmem(["the cat sat"], ["the cat sat on the mat"])
    assert v.name == "verbmem" and v.value == pytest.approx(2 / 3)
    k = knowmem(["Paris", "Berlin"], ["Paris", "Rome"])
    assert k.name == "knowmem" and k.per_sample == pytest.approx([1.0, 0.0])


# ------------------------------------------------------------------------------------------
# Min-K%, AUC, PrivLeak, perplexity


def test_min_k_percent_by_hand():
    # 5 tokens, k = 0.4 -> the 2 lowest: (-5 + -4) / 2
    assert min_k_percent([-1, -2, -3, -4, -5], 0.4) == pytest.approx(-4.5)
    # 3 tokens -> int(1.2) = 1 lowest
    assert min_k_percent([-0.1, -2.0, -0.5], 0.4) == pytest.approx(-2.0)
    # at least one token
    assert min_k_percent([-0.3], 0.4) == pytest.approx(-0.3)
    assert min_k_percent([], 0.4) is None
    r = min_k_percent_score([[-1, -2, -3, -4, -5], [-0.3], []])
    assert r.per_sample == pytest.approx([-4.5, -0.3, None])
    assert r.value == pytest.approx((-4.5 - 0.3) / 2)
    # higher = more likely a member: a well-predicted text scores above a poorly predicted one
    assert min_k_percent([-0.1] * 10) > min_k_percent([-3.0] * 10)
    assert min_k_percent_score([[]]).reason == "no scored tokens"
    with pytest.raises(ValueError):
        min_k_percent_score([[-1.0]], k=0)


def test_auc_by_hand():
    assert auc([3, 4], [1, 2]).value == 1.0
    assert auc([1, 2], [3, 4]).value == 0.0
    assert auc([1, 1], [1, 1, 1]).value == 0.5
    # pairs: .9>.5, .9>.6, .4<.5, .4<.6, .6>.5, .6=.6 (0.5) -> 3.5 / 6
    assert auc([0.9, 0.4, 0.6], [0.5, 0.6]).value == pytest.approx(3.5 / 6)
    assert auc([], [1.0]).reason == "no forget scores"
    assert auc([1.0], []).reason == "no holdout scores"


def test_auc_matches_brute_force_pairs():
    import random

    rng = random.Random(0)
    pos = [rng.choice([0.0, 0.5, 1.0, 1.5]) for _ in range(13)]
    neg = [rng.choice([0.0, 0.5, 1.0]) for _ in range(11)]
    pairs = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    assert auc(pos, neg).value == pytest.approx(pairs / (len(pos) * len(neg)))


def test_privleak_sign_and_reasons():
    # docs/spec.md#46-text-metrics-muse-style as corrected on 2026-11-22
    # (MUSE's convention, A = 1 - AUC): a model whose forget texts look MORE like members than to
    # the reference is negative (under-unlearning)
    assert privleak(0.6, 0.5).value == pytest.approx(-20.0)
    assert privleak(0.4, 0.5).value == pytest.approx(20.0)  # over-unlearning: positive
    assert privleak(MetricResult("auc", 0.75), MetricResult("auc", 0.5)).value == -50.0
    assert privleak(0.6, None).reason == "no retain-reference AUC"
    assert privleak(None, 0.5).reason == "no AUC for the unlearned model"
    assert privleak(0.6, 1.0).value is None  # A_reference = 1 - 1 = 0: undefined
    assert privleak(0.6, 0.0).value == pytest.approx(-60.0)  # (0.4 - 1) / 1


def test_perplexity_token_weighted():
    r = perplexity([1.0, 2.0], [1, 3])
    assert r.value == pytest.approx(math.exp(7 / 4))
    assert r.per_sample == pytest.approx([math.e, math.e ** 2])
    assert perplexity([1.0], [0]).reason == "no scored tokens"
    lp = perplexity_from_logprobs([[-1.0], [-2.0, -2.0, -2.0]])
    assert lp.value == pytest.approx(math.exp(7 / 4))


def test_metric_result_to_dict():
    d = probability([]).to_dict()
    assert d == {"name": "probability", "value": None, "per_sample": [],
                 "reason": "no rows to score"}


# ------------------------------------------------------------------------------------------
# Model-side helpers on the tiny model


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    import torch

    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    torch.manual_seed(0)
    tok = load_tokenizer(str(tiny_model_dir))
    model = load_model(str(tiny_model_dir)).eval()
    return model, Encoder(tok, max_length=128)


def test_candidate_nlls_match_scoring_alone(tiny, demo_dir):
    from sga_core.data import load_qa
    from sga_core.evaluation.inputs import score_qa_candidates
    from sga_core.model.forward import batched_nll

    model, enc = tiny
    rows = load_qa(demo_dir / "forget.jsonl")[:2] + load_qa(demo_dir / "real_authors.jsonl")[:1]
    scores = score_qa_candidates(model, enc, rows, rows_per_batch=2)
    assert len(scores) == 3
    assert scores[2]["paraphrased"] is None  # real_authors rows have no paraphrase
    for row, s in zip(rows, scores):
        assert len(s["perturbed"]) == len(row["perturbed_answer"])
        cands = [("answer", row["answer"])]
        if row.get("paraphrased_answer"):
            cands.append(("paraphrased", row["paraphrased_answer"]))
        got = [s[k] for k, _ in cands] + s["perturbed"]
        texts = [t for _, t in cands] + row["perturbed_answer"]
        for g, text in zip(got, texts):
            alone = batched_nll(model, [enc.qa(row["question"], text)], enc.pad_id,
                                batch_size=1)[0]
            assert g == pytest.approx(alone, abs=1e-5)
    # wired into the metrics
    ans, denom, pert = split_scores(scores)
    assert truth_ratio(pert, denom).value > 0
    assert 0 < normalized_probability(ans, pert).value < 1


def test_text_token_logprobs_match_nll(tiny, demo_dir):
    from sga_core.data import load_text
    from sga_core.evaluation.inputs import text_token_logprobs
    from sga_core.model.forward import rows_nll

    model, enc = tiny
    rows = load_text(demo_dir / "text_holdout.jsonl")[:3]
    lps = text_token_logprobs(model, enc, rows, batch_size=2, full_text=False,
                              include_eos=True)
    nlls = rows_nll(model, enc, rows, kind="text")
    for lp, nll, row in zip(lps, nlls, rows):
        assert len(lp) == enc.row(row, "text").n_scored
        assert -sum(lp) / len(lp) == pytest.approx(nll, abs=1e-5)
    # full text without EOS: one log-prob per text token, all <= 0
    full = text_token_logprobs(model, enc, rows, batch_size=3)
    for lp, row in zip(full, rows):
        n_text = len(enc.tok(row["text"], add_special_tokens=False)["input_ids"])
        assert len(lp) == min(n_text, enc.max_length - 1)  # start token + text, cut at max
        assert all(v <= 0 for v in lp)
    assert min_k_percent_score(full).value < 0


@pytest.fixture(scope="module")
def noisy(tiny):
    """The tiny model with larger random weights: its tied embeddings otherwise make greedy
    decoding repeat the last prompt token (a special token that decodes to nothing)."""
    import copy

    import torch

    model, enc = tiny
    model = copy.deepcopy(model)
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.normal_(0.0, 0.3)
    return model.eval(), enc


def _greedy_alone(model, enc, ids, max_new_tokens):
    import torch

    ids = list(ids)
    new = []
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(input_ids=torch.tensor([ids + new])).logits
            nxt = int(logits[0, -1].argmax())
            if nxt == enc.eos_id:
                break
            new.append(nxt)
    return enc.tok.decode(new, skip_special_tokens=True).strip()


def test_left_padded_generation_matches_single(noisy, demo_dir):
    from sga_core.data import load_qa, load_text
    from sga_core.evaluation.inputs import generate_answers

    model, enc = noisy
    questions = [r["question"] for r in load_qa(demo_dir / "world_facts.jsonl")[:2]]
    questions += [r["question"] for r in load_qa(demo_dir / "forget.jsonl")[:2]]
    assert len({len(enc.prompt_ids(q)) for q in questions}) > 1  # padding really happens
    batched = generate_answers(model, enc, questions, max_new_tokens=8, batch_size=4)
    single = [generate_answers(model, enc, [q], max_new_tokens=8)[0] for q in questions]
    assert batched == single
    assert all(batched)
    # and both equal a hand-rolled greedy loop over the unpadded prompt
    assert batched[0] == _greedy_alone(model, enc, enc.prompt_ids(questions[0]), 8)

    prefixes = [r["prompt"] for r in load_text(demo_dir / "text_forget.jsonl")[:3]]
    tb = generate_answers(model, enc.tok, prefixes, max_new_tokens=6, kind="text",
                          batch_size=3)
    ts = [generate_answers(model, enc, [p], max_new_tokens=6, kind="text")[0]
          for p in prefixes]
    assert tb == ts and all(tb)
    with pytest.raises(ValueError):
        generate_answers(model, enc, ["x"], kind="nope")
