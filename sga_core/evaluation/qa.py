"""TOFU-style evaluation of a loaded model on QA rows (docs/spec.md#4-metrics).

The forget, retain (an evenly spaced subset of at most ``max_retain_rows``) and extra
(real-world) sets are scored once: every candidate answer's NLL in padded batches, one greedy
answer per question; then each QA metric of the catalog (:mod:`sga_core.metrics.catalog`)
is computed from those inputs: per set probability (normalised on the extra sets), truth
ratio score and ROUGE-L recall, Model Utility, and Forget Quality against the retain
reference's forget truth ratios.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from functools import partial

from sga_core.evaluation.choices import fill_choices, sample_fields
from sga_core.evaluation.common import (
    EvalError,
    Progress,
    finite,
    is_qa_rows,
    own_indices,
)
from sga_core.evaluation.compute import (
    evaluate_catalog,
    flat_rows,
    retain_set,
    scatter,
    sets_needing,
)
from sga_core.evaluation.inputs import (
    answer_text,
    answer_token_hits,
    fill_token_inputs,
    generate_answers,
    score_qa_candidates,
)
from sga_core.evaluation.utility import fill_lm_eval, utility_tasks
from sga_core.metrics import tofu, utility_parts
from sga_core.metrics.catalog import QA, UTILITY_SET, expand, mia_losses, sample_keys, spec_of
from sga_core.metrics.context import (
    CANDIDATE_NLLS,
    GREEDY_ANSWERS,
    TOKEN_HITS,
    MetricInputs,
    SetData,
)
from sga_core.metrics.multiple_choice import PROTOCOL_SETS, is_mc_rows
from sga_core.protocols import SET_ROLES

QA_INPUT_KEYS = ("set", "index", "question", "answer", "generated", "nll_answer",
                 "nll_paraphrased", "nll_perturbed")
QA_SAMPLE_KEYS = QA_INPUT_KEYS + sample_keys(QA)
RESERVED = ("forget", "retain")
#: the sets a QA project's evaluation reads by name (the role registry's QA roles that
#: replace no rows: holdout, the MIA attacks' non-members): no per-set QA family runs on them
QA_ROLE_SETS = tuple(n for n, r in SET_ROLES.items() if "qa" in r.kinds and not r.replaces)


def qa_sets(forget_rows: Sequence[dict], retain_rows: Sequence[dict] | None,
            sets: Mapping[str, Sequence[dict]] | None, max_retain_rows: int = 0,
            lm_tasks: Sequence[str] = (), row_ids: Mapping[str, list[int]] | None = None
            ) -> dict[str, SetData]:
    """The evaluated QA sets, in order: forget, the retain subset, each extra set (and the
    utility "set" of lm-eval tasks when there are any). ``row_ids``: the rows' own indices
    in a set of which only a subset is given (``eval.max_rows``)."""
    forget_rows = list(forget_rows or [])
    out = {"forget": SetData("forget", forget_rows,
                             own_indices(row_ids, "forget", len(forget_rows))),
           "retain": retain_set(retain_rows, max_retain_rows, row_ids)}
    for name, rows in (sets or {}).items():
        if name in RESERVED or name == UTILITY_SET:
            raise EvalError(f"eval set name {name!r} is reserved")
        rows = list(rows or [])
        if rows and not is_qa_rows(rows):
            raise EvalError(f"eval set {name!r} is not QA data (question + answer rows)")
        out[name] = SetData(name, rows, own_indices(row_ids, name, len(rows)))
    if lm_tasks:
        out[UTILITY_SET] = SetData(UTILITY_SET, [{"task": t} for t in lm_tasks],
                                   list(range(len(lm_tasks))))
    return out


def absent(name: str) -> str:
    """Why a QA set's metrics cannot be computed when the set has no rows."""
    if name in PROTOCOL_SETS:
        return f"no {name} set (eval.sets.{name})"
    if name in QA_ROLE_SETS:
        return f"no {name} set (eval.sets.{name}; TOFU: holdout01/05/10)"
    return {"forget": "no forget rows",
            "retain": "no retain rows (data.retain)"}.get(name, f"eval set {name!r} is empty")


def fill_inputs(model, enc, sets: dict[str, SetData], instances, *, max_new_tokens: int,
                batch_size: int, device, progress: Progress,
                options: dict | None = None) -> dict[str, float]:
    """Score the candidate answers, generate the greedy answers and find the argmax hits of
    the sets whose metrics need them, all sets in one pass each; run the lm-eval tasks;
    returns the timings."""
    timings = {}
    ts = time.time()
    names = sets_needing(instances, sets, CANDIDATE_NLLS)
    scores = score_qa_candidates(model, enc, flat_rows(sets, names), device,
                                 batch_size=batch_size, progress=progress)
    scatter(sets, names, scores, "nlls")
    timings["scoring_s"] = round(time.time() - ts, 3)
    ts = time.time()
    names = sets_needing(instances, sets, GREEDY_ANSWERS)
    rows = flat_rows(sets, names)
    generated = generate_answers(model, enc, [r["question"] for r in rows], max_new_tokens,
                                 "qa", device, batch_size, progress=progress,
                                 stage="generating answers")
    scatter(sets, names, generated, "generated")
    for n in names:
        sets[n].prompts = [r["question"] for r in sets[n].rows]
        sets[n].gold = [r["answer"] for r in sets[n].rows]
    timings["generation_s"] = round(time.time() - ts, 3)
    ts = time.time()
    for n in sets_needing(instances, sets, TOKEN_HITS):
        d = sets[n]
        d.hits = answer_token_hits(model, enc, [enc.qa(r["question"], r["answer"], role="eval")
                                                for r in d.rows], device, batch_size,
                                   progress=progress, stage=f"scoring {n} tokens")
    timings["token_hits_s"] = round(time.time() - ts, 3)
    ts = time.time()
    fill_token_inputs(model, enc, sets, instances, *answer_scoring(enc), device=device,
                      batch_size=batch_size, progress=progress,
                      stage="scoring answer tokens (MIA)",
                      grad_norms=bool((options or {}).get("mia_gradnorm")), drop_last=True)
    timings["logprobs_s"] = round(time.time() - ts, 3)
    timings.update(fill_lm_eval(model, enc, sets, instances, options or {}, batch_size,
                                progress))
    timings.update(fill_choices(model, enc, sets, instances, batch_size, device, progress))
    return timings


def answer_scoring(enc) -> tuple:
    """``(sequence, text)`` of a QA row for the MIA attacks (:func:`~sga_core.evaluation.
    inputs.fill_token_inputs`): the answer and its EOS scored given the question, and the
    answer decoded from those tokens."""
    def sequence(r: dict):
        return enc.qa(r["question"], r["answer"], role="eval")

    return sequence, lambda r: answer_text(enc, sequence(r))


def _sample_base(d: SetData, j: int) -> dict:
    if d.choice_lls is not None:  # multiple choice: the right choice and the model's
        got = sample_fields(d, j)
        return {"set": d.name, "index": d.indices[j], "question": d.rows[j]["question"],
                "answer": got["reference"], "generated": got.get("generated")}
    row, sc = d.rows[j], (d.nlls[j] if d.nlls else {})
    return {"set": d.name, "index": d.indices[j], "question": row["question"],
            "answer": row["answer"], "generated": d.generated[j] if d.generated else None,
            "nll_answer": sc.get("answer"), "nll_paraphrased": sc.get("paraphrased"),
            "nll_perturbed": list(sc.get("perturbed") or [])}


def evaluate_qa(model, enc, forget_rows: Sequence[dict], retain_rows: Sequence[dict] | None,
                sets: Mapping[str, Sequence[dict]] | None,
                reference_tr: Sequence[float | None] | None,
                max_new_tokens: int = 48, batch_size: int = 16, progress: Progress = None,
                *, max_retain_rows: int = 0, device="cpu",
                reference_reason: str | None = None,
                self_reference: bool = False,
                options: dict | None = None,
                row_ids: Mapping[str, list[int]] | None = None,
                mia_reference: dict | None = None,
                mia_reference_reason: str | None = None) -> tuple[dict, list[dict]]:
    """TOFU-style metrics of a loaded model on QA rows.

    ``sets`` are the extra (real-world) QA sets, name -> rows; Model Utility uses
    ``real_authors`` and ``world_facts``. ``reference_tr`` are the retain reference's forget
    truth ratios (None: Forget Quality is None, with ``reference_reason`` if given);
    ``self_reference``: this model IS the retain reference, so its own truth ratios are the
    reference (its Forget Quality is then 1, the KS p-value of identical samples).
    Returns ``(summary, per_sample)``: ``summary["metrics"]`` maps each QA metric of the
    catalog (``<set>_probability``, ``<set>_truth_ratio``, ``<set>_rouge``,
    ``model_utility``, ``forget_quality``) to ``{"name", "value", "reason"}``;
    ``summary["forget_truth_ratios"]`` is the raw per-row list (the values a later run
    compares against when this model is its reference). ``mia_reference``: the retain
    reference's AUC of each attack on the forget against the ``holdout`` rows (PrivLeak;
    None with ``mia_reference_reason``). ``options``: the evaluation
    protocol's settings (:mod:`sga_core.protocols`; default: the demo's). ``row_ids``: the
    rows' own indices where only a subset of a set is given (``eval.max_rows``).
    """
    options = dict(options or {})
    tasks, extra = utility_tasks(options)
    data = qa_sets(forget_rows, retain_rows, sets, max_retain_rows, tasks, row_ids)
    mc_sets = [n for n, d in data.items() if n not in RESERVED and is_mc_rows(d.rows)]
    results, summary, per_sample = evaluate_catalog(
        QA, data, expand(QA, qa_sets=[n for n in data
                                      if n not in RESERVED + QA_ROLE_SETS + (UTILITY_SET,)
                                      and n not in mc_sets],
                         lm_tasks=extra, protocol=options.get("name"), mc_sets=mc_sets),
        partial(fill_inputs, model, enc, max_new_tokens=max_new_tokens,
                batch_size=batch_size, device=device, progress=progress, options=options),
        absent, QA_INPUT_KEYS, _sample_base, retain_rows=retain_rows,
        reference=reference_tr, reference_reason=reference_reason,
        self_reference=self_reference, options=options, mia_reference=mia_reference,
        mia_reference_reason=mia_reference_reason)
    summary["mia_losses"] = finite(mia_losses(data))  # the Reference attack's, as a reference
    summary["forget_truth_ratios"] = finite([float(t) if t is not None else None
                                             for t in results["forget_truth_ratio"].per_sample])
    # MU's 9 components by name, and the lowest (sga_core.metrics.utility_parts)
    mu_sets = tofu.mu_sets({n: d.rows for n, d in data.items()})
    summary["model_utility_components"] = finite(utility_parts.breakdown(results, mu_sets))
    return summary, per_sample


def reference_truth_ratios(model, enc, forget_rows: Sequence[dict], batch_size: int = 16,
                           device="cpu", progress: Progress = None,
                           options: dict | None = None) -> list:
    """The forget truth ratios of a (reference) model: the per-row values of its
    ``forget_truth_ratio`` metric (under the protocol's denominator and epsilon)."""
    data = {"forget": SetData("forget", list(forget_rows), list(range(len(forget_rows))))}
    data["forget"].nlls = score_qa_candidates(model, enc, forget_rows, device,
                                              batch_size=batch_size, progress=progress,
                                              stage="reference: scoring forget answers")
    spec = spec_of("forget_truth_ratio", QA)
    return spec.compute(MetricInputs(spec.name, data, spec.on,
                                     options=dict(options or {}))).per_sample
