"""open-unlearning's evaluation logs, written as its code writes them (locuslab/
open-unlearning at d3d7cf9e6b3c125d16687d4232680d8d83548f1a), for fixtures.

Each function below ports the arithmetic and the result layout of the OU function it names,
line by line, from per-row inputs (NLLs, token log-probs) instead of a model:

- ``src/evals/metrics/utils.py`` ``evaluate_probability``: ``{"prob": exp(-avg_loss),
  "avg_loss"}`` per row; ``run_batchwise_evals`` keys them by the dataset index (an int;
  for several perturbed answers a list per key, ``dict_transpose``);
- ``src/evals/metrics/memorization.py`` ``probability`` and ``truth_ratio``;
- ``src/evals/metrics/utils.py`` ``eval_text_similarity``'s per-row ROUGE record;
- ``src/evals/metrics/mia/min_k.py`` ``MinKProbAttack.compute_score``, ``all_attacks.py``
  ``Attack.attack`` (``str(idx)`` keys) and ``mia/utils.py`` ``mia_auc``;
- ``src/evals/metrics/privacy.py`` ``ks_test`` and ``privleak``;
- ``src/evals/base.py`` ``Evaluator.save_logs`` (sorted keys, indent 4) and ``summarize``
  (each listed metric's ``agg_value``), into ``<NAME>_EVAL.json`` / ``<NAME>_SUMMARY.json``.

JSON turns the int row keys into strings, as OU's files have them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.stats import ks_2samp
from sklearn.metrics import roc_auc_score


def probability(avg_losses: list) -> dict:
    """``probability`` over ``evaluate_probability``'s records (one answer, or a list of
    answers per row: the perturbed ones)."""
    by_index = {}
    for i, loss in enumerate(avg_losses):
        if isinstance(loss, list):  # dict_transpose: {idx: {prob: [...], avg_loss: [...]}}
            by_index[i] = {"prob": [float(np.exp(-x)) for x in loss], "avg_loss": list(loss)}
        else:
            by_index[i] = {"prob": float(np.exp(-loss)), "avg_loss": float(loss)}
    prob_values = np.array([e["prob"] for e in by_index.values() if e["prob"] is not None])
    prob_values = prob_values.mean(axis=1) if prob_values.ndim > 1 else prob_values  # 1D
    return {"agg_value": np.mean(prob_values), "value_by_index": by_index}


def truth_ratio(correct: dict, wrong: dict, aggregator: str = "closer_to_1_better") -> dict:
    """memorization.py ``truth_ratio`` on the two probability results."""
    def closer_to_1_better(arr):
        return np.mean(np.minimum(arr, 1 / (arr + 1e-10)))

    def true_better(arr):
        return np.mean(np.maximum(0, 1 - arr))

    def prob_mean(arr):
        return np.mean(arr)

    agg = {"closer_to_1_better": closer_to_1_better, "true_better": true_better,
           "prob_mean": prob_mean}[aggregator]
    correct_answer_results = correct["value_by_index"]
    wrong_answer_results = wrong["value_by_index"]
    correct_indices = list(correct_answer_results.keys())
    assert correct_indices == list(wrong_answer_results.keys())
    filtered_indices = [idx for idx in correct_indices
                        if correct_answer_results[idx] is not None
                        and wrong_answer_results[idx] is not None]
    correct_avg_losses = [correct_answer_results[idx]["avg_loss"] for idx in filtered_indices]
    wrong_avg_losses = [wrong_answer_results[idx]["avg_loss"] for idx in filtered_indices]
    correct_avg_losses = _to_1d(np.array(correct_avg_losses))
    wrong_avg_losses = _to_1d(np.array(wrong_avg_losses))
    correct_prob = np.exp(-correct_avg_losses)
    wrong_prob = np.exp(-wrong_avg_losses)
    if aggregator != "prob_mean":
        truth_ratios = wrong_prob / (correct_prob + 1e-10)
    else:
        truth_ratios = correct_prob / (correct_prob + wrong_prob + 1e-10)
    value_by_index = dict(zip(correct_indices, [{"score": val} for val in truth_ratios]))
    stats = np.array([e["score"] for e in value_by_index.values()])
    return {"agg_value": agg(stats), "value_by_index": value_by_index}


def _to_1d(arr):
    """utils.py ``aggregate_to_1D``: the mean over every axis but the first."""
    return np.mean(arr, axis=tuple(range(1, arr.ndim)))


def rouge_records(questions: list[str], answers: list[str]) -> dict:
    """``forget_Q_A_ROUGE``'s layout: eval_text_similarity's per-row record (the scores of
    an empty generation here), keyed by index."""
    by_index = {i: {"rouge1_recall": 0.0, "rougeL_f1": 0.0, "rougeL_recall": 0.0,
                    "input": f"user\n\n{q}assistant\n\n", "ground_truth": a,
                    "generation": ""}
                for i, (q, a) in enumerate(zip(questions, answers))}
    return {"agg_value": 0.0, "value_by_index": by_index}


def min_k_score(lp: list[float], k: float = 0.4) -> float:
    """min_k.py ``MinKProbAttack.compute_score``."""
    lp = np.array(lp, dtype=np.float32)
    if lp.size == 0:
        return 0
    num_k = max(1, int(len(lp) * k))
    sorted_vals = np.sort(lp)
    return -np.mean(sorted_vals[:num_k])


def attack(logprobs: list[list[float]], k: float = 0.4) -> dict:
    """all_attacks.py ``Attack.attack`` with Min-K% scores."""
    all_scores = [min_k_score(lp, k) for lp in logprobs]
    scores_by_index = {str(idx): {"score": float(s)} for idx, s in enumerate(all_scores)}
    return {"agg_value": float(np.mean(all_scores)), "value_by_index": scores_by_index}


def mia_min_k(forget_lps: list[list[float]], holdout_lps: list[list[float]]) -> dict:
    """mia/utils.py ``mia_auc`` with the Min-K% attack (k 0.4, OU's config)."""
    output = {"forget": attack(forget_lps), "holdout": attack(holdout_lps)}
    forget_scores = [e["score"] for e in output["forget"]["value_by_index"].values()]
    holdout_scores = [e["score"] for e in output["holdout"]["value_by_index"].values()]
    scores = np.array(forget_scores + holdout_scores)
    labels = np.array([0] * len(forget_scores) + [1] * len(holdout_scores))
    auc_value = roc_auc_score(labels, scores)
    output["auc"], output["agg_value"] = auc_value, auc_value
    return output


def ks_test(forget_tr: dict, retain_tr: dict | None) -> dict:
    """privacy.py ``ks_test`` (pre_compute forget; reference_logs retain)."""
    forget_tr_stats = np.array([e["score"] for e in forget_tr["value_by_index"].values()])
    if retain_tr:
        retain_tr_stats = np.array([e["score"] for e in retain_tr["value_by_index"].values()])
        return {"agg_value": ks_2samp(forget_tr_stats, retain_tr_stats).pvalue}
    return {"agg_value": None}


def privleak(forget_auc: float, retain_auc: float | None, ref_value: float = 0.5) -> dict:
    """privacy.py ``privleak``."""
    score = forget_auc
    ref = retain_auc if retain_auc is not None else ref_value
    score = 1 - score
    ref = 1 - ref
    return {"agg_value": (score - ref) / (ref + 1e-10) * 100}


def save_logs(logs: dict, file: Path) -> Path:
    """base.py ``Evaluator.save_logs``."""
    logs = dict(sorted(logs.items()))
    file.parent.mkdir(parents=True, exist_ok=True)
    with open(file, "w") as f:
        json.dump(logs, f, indent=4)
    return file


def summarize(logs: dict, metrics: list[str]) -> dict:
    """base.py ``Evaluator.summarize``: the listed metrics' agg_value."""
    return {name: res["agg_value"] for name, res in logs.items()
            if name in metrics and res.get("agg_value") is not None}


def tofu_logs(rows: list[dict], nll_para: list, nll_pert: list, *,
              aggregator: str = "closer_to_1_better") -> dict:
    """A TOFU retain model's TOFU_EVAL.json content: the metrics ``forget_quality`` and
    ``forget_Q_A_ROUGE`` compute and cache (their pre_compute results included), from the
    model's per-row NLLs of the paraphrased and perturbed answers."""
    para, pert = probability(nll_para), probability(nll_pert)
    tr = truth_ratio(para, pert, aggregator)
    return {"forget_Q_A_PARA_Prob": para, "forget_Q_A_PERT_Prob": pert,
            "forget_truth_ratio": tr, "forget_quality": ks_test(tr, None),
            "forget_Q_A_ROUGE": rouge_records([r["question"] for r in rows],
                                              [r["answer"] for r in rows])}


def write_ou_logs(folder: Path, name: str, logs: dict, listed: list[str]) -> tuple[Path, Path]:
    """``<name>_EVAL.json`` and ``<name>_SUMMARY.json`` as the Evaluator writes them."""
    return (save_logs(logs, folder / f"{name}_EVAL.json"),
            save_logs(summarize(logs, listed), folder / f"{name}_SUMMARY.json"))
