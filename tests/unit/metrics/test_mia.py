"""The membership-inference attacks against open-unlearning's own code
(locuslab/open-unlearning d3d7cf9, ``src/evals/metrics/mia/``), ported below: each attack's
per-text score and its AUC through ``sklearn.metrics.roc_auc_score`` with OU's labels
(forget 0, holdout 1), on identical per-token inputs, against the catalog's metric; and the
vocabulary statistics Min-K%++ needs against the full next-token distribution."""

from __future__ import annotations

import random
import zlib

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from sga_core.metrics.catalog import TEXT, spec_of
from sga_core.metrics.context import MetricInputs, SetData
from sga_core.protocols import get_protocol

TOL = 1e-4


# --- open-unlearning, ported (mia/loss.py, zlib.py, min_k_plus_plus.py, utils.py) ------------
def ou_loss(lp):  # LOSSAttack.compute_score: avg_loss (evaluate_probability)
    return -float(np.mean(lp))


def ou_zlib(lp, text):  # ZLIBAttack.compute_score
    return ou_loss(lp) / len(zlib.compress(text.encode("utf-8")))


def ou_min_k_plus_plus(target_prob, all_probs, k=0.4):  # MinKPlusPlusAttack.compute_score
    if len(target_prob) == 0:
        return 0
    mu = (torch.exp(all_probs) * all_probs).sum(-1)
    sigma = (torch.exp(all_probs) * torch.square(all_probs)).sum(-1) - torch.square(mu)
    sigma = torch.clamp(sigma, min=1e-6)
    scores = (target_prob.float().cpu().numpy() - mu.float().cpu().numpy()) / \
        torch.sqrt(sigma).cpu().numpy()
    num_k = max(1, int(len(scores) * k))
    return -np.mean(sorted(scores)[:num_k])


def ou_auc(forget_scores, holdout_scores):  # mia_auc
    labels = [0] * len(forget_scores) + [1] * len(holdout_scores)
    return roc_auc_score(labels, forget_scores + holdout_scores)


# --- inputs ----------------------------------------------------------------------------------
def texts_with_distributions(n, seed, vocab=11):
    """``n`` texts, each with per-token full log-distributions over a small vocabulary and
    the log-probability of its true tokens (members: the true token favoured)."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        length = rng.randint(3, 9)
        logits = torch.randn(length, vocab, generator=gen, dtype=torch.float64) * 2
        targets = torch.randint(0, vocab, (length,), generator=gen)
        logits[torch.arange(length), targets] += rng.uniform(-1, 3)
        logp = torch.log_softmax(logits, -1)
        words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(
            rng.randint(2, 30)))
        out.append({"text": f"text {seed}-{i}: {words}", "all": logp,
                    "target": logp[torch.arange(length), targets]})
    return out


def set_data(name, items):
    p = [it["all"].exp() for it in items]
    mu = [(q * it["all"]).sum(-1) for q, it in zip(p, items)]
    var = [(q * it["all"].square()).sum(-1) - m.square() for q, it, m in zip(p, items, mu)]
    return SetData(name, [{"text": it["text"]} for it in items], list(range(len(items))),
                   logprobs=[it["target"].tolist() for it in items],
                   texts=[it["text"] for it in items],
                   vocab_stats=[{"logprobs": it["target"].tolist(), "mu": m.tolist(),
                                 "var": v.tolist()} for it, m, v in zip(items, mu, var)])


def catalog_auc(name, forget, holdout):
    spec = spec_of(name, TEXT)
    sets = {"forget": set_data("forget", forget), "holdout": set_data("holdout", holdout)}
    options = get_protocol("muse").settings() | {"name": "muse"}
    return spec.compute(MetricInputs(name, sets, spec.on, {}, None, None, False, options))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_attacks_auc_is_open_unlearnings(seed):
    forget = texts_with_distributions(6, seed)
    holdout = texts_with_distributions(7, seed + 100)
    ou = {
        "mia_loss_auc": [ou_loss(it["target"].numpy()) for it in forget + holdout],
        "mia_zlib_auc": [ou_zlib(it["target"].numpy(), it["text"]) for it in forget + holdout],
        "mia_min_k_plus_plus_auc": [float(ou_min_k_plus_plus(it["target"], it["all"]))
                                    for it in forget + holdout],
    }
    for name, scores in ou.items():
        want = ou_auc(scores[:len(forget)], scores[len(forget):])
        res = catalog_auc(name, forget, holdout)
        print(f"{name} seed {seed}: |AUC - OU's| = {abs(res.value - want):.2e}, max per-text "
              f"score difference {max(abs(a + b) for a, b in zip(res.per_sample, scores)):.2e}")
        assert res.value == pytest.approx(want, abs=TOL), name
        # per sample: each text's member score, OU's score negated (members score high)
        assert res.per_sample == pytest.approx([-s for s in scores], abs=TOL), name
        assert 0 < want < 1  # the attacks separate the two sets only in part


def test_a_text_without_tokens_scores_none_and_is_left_out():
    forget = texts_with_distributions(3, 5)
    holdout = texts_with_distributions(3, 6)
    empty = torch.zeros(0, dtype=torch.float64)
    forget.append({"text": "", "all": torch.zeros(0, 11, dtype=torch.float64),
                   "target": empty})
    res = catalog_auc("mia_min_k_plus_plus_auc", forget, holdout)
    assert res.per_sample[3] is None and res.value is not None
    kept = [float(ou_min_k_plus_plus(it["target"], it["all"])) for it in forget[:3] + holdout]
    assert res.value == pytest.approx(ou_auc(kept[:3], kept[3:]), abs=TOL)


def test_vocab_stats_are_the_full_distributions(tiny_model_dir):
    """Min-K%++'s inputs from the label-position head equal those of the full logits of
    every position (open-unlearning's ``tokenwise_vocab_logprobs``)."""
    from sga_core.evaluation.inputs import text_sequence, text_token_logprobs, text_vocab_stats
    from sga_core.model.encoding import Encoder, collate
    from sga_core.model.loading import load_model, load_tokenizer

    model = load_model(str(tiny_model_dir)).double().eval()
    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    texts = ["The quick brown fox jumps over the lazy dog.", "A short one.",
             "Members of the forget set were written in 1998 by a fictional author."]
    ours = text_vocab_stats(model, enc, texts, batch_size=2)
    for stats, lps in zip(ours, text_token_logprobs(model, enc, texts), strict=True):
        assert stats["logprobs"] == pytest.approx(lps, abs=1e-9)
    for text, stats in zip(texts, ours):
        seq = text_sequence(enc, text, True, False)
        batch = collate([seq], enc.pad_id)
        with torch.no_grad():
            logp = torch.log_softmax(model(**{k: batch[k] for k in ("input_ids",
                                                                  "attention_mask")}).logits,
                                     -1)[0, :-1]
        scored = (batch["labels"][0, 1:] != -100).nonzero()[:, 0]
        assert len(scored) == len(stats["mu"]) > 0
        all_probs = logp[scored]
        mu = (all_probs.exp() * all_probs).sum(-1)
        var = (all_probs.exp() * all_probs.square()).sum(-1) - mu.square()
        assert stats["mu"] == pytest.approx(mu.tolist(), abs=TOL)
        assert stats["var"] == pytest.approx(var.tolist(), abs=TOL)
        target = all_probs.gather(-1, batch["labels"][0, 1:][scored].unsqueeze(-1))[:, 0]
        assert stats["logprobs"] == pytest.approx(target.tolist(), abs=TOL)
