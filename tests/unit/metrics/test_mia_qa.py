"""The membership-inference attacks on QA rows (TOFU's forget against its holdout split)
against open-unlearning's own code (locuslab/open-unlearning d3d7cf9), ported below:
``src/evals/metrics/utils.py`` (``evaluate_probability``, ``tokenwise_logprobs``,
``tokenwise_vocab_logprobs``, ``extract_target_texts_from_processed_data``) run on the full
logits of the tiny model over the same token sequences (the question's prompt unlabelled,
the answer and its EOS labelled, as OU's ``QADataset`` labels them), then
``src/evals/metrics/mia/{loss,zlib,min_k,min_k_plus_plus}.py``'s scores and ``mia/utils.py``
``mia_auc`` (``roc_auc_score``, forget 0, holdout 1); against the QA evaluation's metrics."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

from sga_core.fileio import read_jsonl
from tests.unit.metrics.test_mia import ou_auc, ou_min_k_plus_plus  # mia/min_k_plus_plus.py

TOL = 1e-4
IGNORE_INDEX = -100


# --- open-unlearning src/evals/metrics/utils.py, ported ---------------------------------------
def ou_evaluate_probability(model, batch):
    with torch.no_grad():
        output = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    logits = output.logits
    labels = batch["labels"]
    shifted_labels = labels[..., 1:].contiguous()
    logits = logits[..., :-1, :].contiguous()
    loss_function = torch.nn.CrossEntropyLoss(ignore_index=IGNORE_INDEX, reduction="none")
    losses = loss_function(logits.transpose(-1, -2), shifted_labels).sum(dim=-1)
    num_token_gt = (batch["labels"] != IGNORE_INDEX).sum(-1)
    avg_losses = losses / num_token_gt
    return [{"avg_loss": a} for a in avg_losses.tolist()]


def ou_tokenwise(model, batch, vocab: bool, grad: bool = False):
    """tokenwise_logprobs (``vocab`` False) / tokenwise_vocab_logprobs (True)."""
    with torch.set_grad_enabled(grad):
        output = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    log_probs = torch.nn.functional.log_softmax(output.logits, dim=-1)[:, :-1, :]
    next_tokens = batch["input_ids"][:, 1:].unsqueeze(-1)
    target_log_probs = torch.gather(log_probs, dim=2, index=next_tokens).squeeze(-1)
    out = []
    for i in range(log_probs.shape[0]):
        labels = batch["labels"][i]
        actual_indices = (labels != IGNORE_INDEX).nonzero(as_tuple=True)[0][:-1]
        start_idx, end_idx = actual_indices[0].item(), actual_indices[-1].item()
        src = log_probs if vocab else target_log_probs
        out.append(src[i, start_idx - 1:end_idx])
    return out


def ou_texts(tokenizer, batch):  # extract_target_texts_from_processed_data
    labels = [elem[elem != -100] for elem in batch["labels"]]
    return [tokenizer.decode(elem.tolist(), skip_special_tokens=True) for elem in labels]


# --- open-unlearning src/evals/metrics/mia/*.py compute_score, ported (Min-K%++ and mia_auc:
# test_mia.py's ports) ---------------------------------------------------------------------
def ou_scores(model, tok, batch, k=0.4) -> dict[str, list[float]]:
    losses = [r["avg_loss"] for r in ou_evaluate_probability(model, batch)]
    texts = ou_texts(tok, batch)
    out = {"loss": losses,
           "zlib": [lo / len(zlib.compress(t.encode("utf-8"))) for lo, t in zip(losses, texts)],
           "min_k": [], "min_k_plus_plus": []}
    for lp in ou_tokenwise(model, batch, False):
        lp = lp.float().cpu().numpy()
        num_k = max(1, int(len(lp) * k))
        out["min_k"].append(-np.mean(np.sort(lp)[:num_k]))
    vocab = ou_tokenwise(model, batch, True)
    for all_probs, target_prob in zip(vocab, ou_tokenwise(model, batch, False)):
        out["min_k_plus_plus"].append(ou_min_k_plus_plus(target_prob, all_probs, k))
    return out


def ou_gradnorm(model, batch, p=2):  # mia/gradnorm.py GradNormAttack.compute_batch_values
    model.train()
    batch_log_probs = ou_tokenwise(model, batch, False, grad=True)
    batch_loss = [-torch.mean(lps) for lps in batch_log_probs]
    batch_grad_norms = []
    for sample_loss in batch_loss:
        sample_grad_norms = []
        model.zero_grad()
        sample_loss.backward()
        for param in model.parameters():
            if param.grad is not None:
                sample_grad_norms.append(param.grad.detach().norm(p=p))
        batch_grad_norms.append(torch.stack(sample_grad_norms).mean())
    model.eval()
    return [float(g) for g in batch_grad_norms]  # compute_score: the norm itself


def _batch(enc, rows):
    from sga_core.model.encoding import collate

    return collate([enc.qa(r["question"], r["answer"], role="eval") for r in rows], enc.pad_id)


NAMES = {"min_k": "mia_auc", "loss": "mia_loss_auc", "zlib": "mia_zlib_auc",
         "min_k_plus_plus": "mia_min_k_plus_plus_auc"}


def test_qa_attacks_equal_open_unlearnings_tofu_mia(tiny_model_dir, demo_dir):
    from sga_core.evaluation.qa import evaluate_qa
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    model = load_model(str(tiny_model_dir)).double().eval()
    tok = load_tokenizer(str(tiny_model_dir))
    enc = Encoder(tok)
    forget = read_jsonl(demo_dir / "forget.jsonl")[:6]
    # TOFU's holdout rows: question + answer only (locuslab/TOFU holdout10)
    holdout = [{"question": r["question"], "answer": r["answer"]}
               for r in read_jsonl(demo_dir / "retain.jsonl")[:5]]
    summary, per_sample = evaluate_qa(model, enc, forget, read_jsonl(demo_dir / "retain.jsonl")
                                      [:2], {"holdout": holdout}, None, max_new_tokens=1,
                                      batch_size=4)
    ou_f, ou_h = ou_scores(model, tok, _batch(enc, forget)), ou_scores(model, tok,
                                                                       _batch(enc, holdout))
    worst = 0.0
    for attack, name in NAMES.items():
        want = ou_auc(ou_f[attack], ou_h[attack])
        got = summary["metrics"][name]["value"]
        worst = max(worst, abs(got - want))
        assert got == pytest.approx(want, abs=TOL), name
    print(f"max |AUC - OU's AUC| = {worst:.2e}")
    # per sample: Min-K%'s member score (OU's score negated), the forget rows then holdout
    mink = [r["min_k_score"] for r in per_sample if r["set"] in ("forget", "holdout")]
    assert mink == pytest.approx([-s for s in ou_f["min_k"] + ou_h["min_k"]], abs=TOL)
    # the holdout set is read by the attacks only: no per-set QA metric runs on it
    assert not [k for k in summary["metrics"] if k.startswith("holdout_")]


def test_qa_attacks_without_a_holdout_set_say_so(tiny_model_dir, demo_dir):
    from sga_core.evaluation.qa import evaluate_qa
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    model = load_model(str(tiny_model_dir)).eval()
    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    rows = read_jsonl(demo_dir / "forget.jsonl")[:2]
    stages = set()
    summary, _ = evaluate_qa(model, enc, rows, rows, {}, None, max_new_tokens=1,
                             progress=lambda stage, done, total: stages.add(stage))
    for name in NAMES.values():
        m = summary["metrics"][name]
        assert m["value"] is None and "no holdout set" in m["reason"], name
    assert "scoring answer tokens (MIA)" not in stages  # no forward for attacks that cannot run
    evaluate_qa(model, enc, rows, rows, {"holdout": rows}, None, max_new_tokens=1,
                progress=lambda stage, done, total: stages.add(stage))
    assert "scoring answer tokens (MIA)" in stages


def test_gradnorm_equals_open_unlearnings(tiny_model_dir, demo_dir):
    """GradNorm (p = 2, one row per batch as OU's config has it) on QA answers, and the AUC
    of the QA evaluation with it on; its cost: one forward and backward pass per row."""
    from sga_core.evaluation.inputs import gradient_norms
    from sga_core.evaluation.qa import evaluate_qa
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    model = load_model(str(tiny_model_dir)).double().eval()
    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    forget = read_jsonl(demo_dir / "forget.jsonl")[:5]
    holdout = [{"question": r["question"], "answer": r["answer"]}
               for r in read_jsonl(demo_dir / "retain.jsonl")[:5]]
    ou = {n: [ou_gradnorm(model, _batch(enc, [r]))[0] for r in rows]
          for n, rows in (("forget", forget), ("holdout", holdout))}
    ours = gradient_norms(model, [enc.qa(r["question"], r["answer"], role="eval")
                                  for r in forget], enc.pad_id, drop_last=True)
    assert ours == pytest.approx(ou["forget"], rel=1e-6)
    assert all(q.grad is None for q in model.parameters())  # nothing left behind
    summary, _ = evaluate_qa(model, enc, forget, forget[:1], {"holdout": holdout}, None,
                             max_new_tokens=1, options={"mia_gradnorm": True})
    want = ou_auc(ou["forget"], ou["holdout"])
    got = summary["metrics"]["mia_gradnorm_auc"]["value"]
    print(f"|GradNorm AUC - OU's| = {abs(got - want):.2e}, max rel. norm difference "
          f"{max(abs(a - b) / b for a, b in zip(ours, ou['forget'])):.2e}")
    assert got == pytest.approx(want, abs=TOL)
    off, _ = evaluate_qa(model, enc, forget, forget[:1], {"holdout": holdout}, None,
                         max_new_tokens=1)  # off by default: it costs a backward pass per row
    assert off["metrics"]["mia_gradnorm_auc"]["value"] is None
    assert "eval.mia_gradnorm" in off["metrics"]["mia_gradnorm_auc"]["reason"]


def test_gradnorm_on_texts_equals_open_unlearnings_with_the_eos_left_out(tmp_path,
                                                                        tiny_model_dir,
                                                                        demo_dir):
    """Text rows score every token of the text and no EOS (as the text attacks do: spec
    4.6); OU's GradNorm on the same text with its EOS labelled leaves that EOS out."""
    from sga_core.evaluation import EvalSettings, evaluate_model
    from sga_core.evaluation.inputs import gradient_norms
    from sga_core.evaluation.text import full_text, text_scoring
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    model = load_model(str(tiny_model_dir)).eval()
    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    forget = read_jsonl(demo_dir / "text_forget.jsonl")[:4]
    holdout = read_jsonl(demo_dir / "text_holdout.jsonl")[:4]
    with_eos = {n: [ou_gradnorm(model, _text_batch(enc, full_text(r)))[0] for r in rows]
                for n, rows in (("forget", forget), ("holdout", holdout))}
    ours = gradient_norms(model, [text_scoring(enc)[0](r) for r in forget], enc.pad_id)
    assert ours == pytest.approx(with_eos["forget"], rel=1e-5)
    s = evaluate_model(str(tiny_model_dir), tmp_path / "eval", forget, holdout[:2],
                       {"holdout": holdout}, task="text",
                       settings=EvalSettings(max_new_tokens=1, batch_size=8, mia_gradnorm=True))
    assert s["metrics"]["mia_gradnorm_auc"]["value"] == pytest.approx(
        ou_auc(with_eos["forget"], with_eos["holdout"]), abs=TOL)


def _text_batch(enc, text):
    from sga_core.model.encoding import collate

    return collate([enc.text("", text, role="eval")], enc.pad_id)  # its EOS labelled

