"""MUSE-style evaluation of a loaded model on text rows (docs/spec.md#4-metrics).

The sets: ``forget`` (VerbMem prefixes, Min-K% members, perplexity), ``holdout`` (never
trained on: Min-K% non-members, perplexity), the ``retain`` subset, ``forget_qa`` /
``retain_qa`` (KnowMem), and any extra QA set (``<name>_knowmem``) or text set
(``<name>_perplexity``). Their model-side inputs (greedy continuations and answers, token
log-probs) are computed once, then each text metric of the catalog
(:mod:`sga_core.metrics.catalog`) is computed from them.
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
    retain_set,
    sets_needing,
)
from sga_core.evaluation.inputs import (
    answer_token_hits,
    cut_at,
    fill_token_inputs,
    first_tokens,
    generate_answers,
    text_sequence,
)
from sga_core.evaluation.utility import fill_lm_eval, utility_tasks
from sga_core.metrics.catalog import TEXT, UTILITY_SET, expand, mia_losses, sample_keys, spec_of
from sga_core.metrics.context import (
    COMPLETIONS,
    GREEDY_ANSWERS,
    GREEDY_CONTINUATIONS,
    TOKEN_HITS,
    MetricInputs,
    SetData,
)
from sga_core.metrics.multiple_choice import PROTOCOL_SETS, is_mc_rows
from sga_core.metrics.result import numbers
from sga_core.protocols import ICL_SUFFIX, SET_ROLES

VERBMEM_NEW_TOKENS = 128  # MUSE
TEXT_PROMPT_WORDS = 15  # text rows without a prompt: split after this many words (the demo's)
# the sets a text project's evaluation reads by name (the role registry's text-only roles:
# holdout, forget_qa, retain_qa); <set>_icl: MUSE's few-shot examples for the QA set <set>
TEXT_SETS = tuple(n for n, r in SET_ROLES.items() if "text" in r.kinds and not r.replaces)
# scored_tokens: the tokens a row's perplexity is over (perplexity is token-weighted, so its
# bootstrap over rows needs them: sga_core/report/row_stats.py)
TEXT_INPUT_KEYS = ("set", "index", "prompt", "reference", "generated", "scored_tokens")
TEXT_SAMPLE_KEYS = TEXT_INPUT_KEYS + sample_keys(TEXT)


def full_text(row: dict | str) -> str:
    """The whole passage of a text row (``text``, else prompt + continuation)."""
    if isinstance(row, str):
        return row
    if isinstance(row.get("text"), str) and row["text"].strip():
        return row["text"]
    prompt = row.get("prompt") or ""
    cont = row.get("continuation") or row.get("gt") or ""
    sep = " " if prompt and not prompt.endswith((" ", "\n")) else ""
    return prompt + sep + cont


def prompt_and_continuation(row: dict) -> tuple[str, str]:
    """A forget row's VerbMem prefix and true continuation; a row without a prompt is split
    after its first 15 words (the demo's split), or in the middle when it is shorter."""
    prompt = row.get("prompt") or ""
    cont = row.get("continuation") or row.get("gt") or ""
    if prompt.strip():
        return prompt, cont
    words = full_text(row).split()
    cut = min(TEXT_PROMPT_WORDS, max(1, len(words) // 2))
    return " ".join(words[:cut]), " ".join(words[cut:])


def token_rows(tok, rows: Sequence[dict], n_tokens: int) -> list[dict]:
    """The rows a text evaluation's token table scores (the Token probabilities page): each
    forget row's VerbMem prefix with the first ``n_tokens`` tokens of its true continuation,
    the part VerbMem compares against (a whole news article would be thousands of
    columns)."""
    out = []
    for r in rows:
        prompt, cont = prompt_and_continuation(r)
        out.append({"prompt": prompt, "continuation": first_tokens(tok, cont, n_tokens)
                    if n_tokens else cont})
    return out


def drop_end_token(records: list[dict]) -> list[dict]:
    """Token records without their last entry: the end-of-text token the encoder appends,
    which a continuation cut after N tokens does not have."""
    keys = ("tokens", "token_ids", "probs", "top")
    return [{**r, **{k: r[k][:-1] for k in keys if k in r}} for r in records]


def icl_examples(sets: Mapping[str, Sequence[dict]] | None) -> dict[str, list[dict]]:
    """The few-shot example sets (``<set>_icl``, e.g. MUSE's ``forget_qa_icl``), by the QA
    set they serve."""
    return {k[:-len(ICL_SUFFIX)]: list(v or []) for k, v in (sets or {}).items()
            if k.endswith(ICL_SUFFIX)}


def knowmem_prompts(rows: Sequence[dict], icl: Sequence[dict]) -> list[str]:
    """MUSE's KnowMem prompts (muse_bench metrics/knowmem.py): each few-shot example as
    ``Question: q\nAnswer: a\n\n``, then ``Question: q\nAnswer: ``."""
    head = "".join(f"Question: {e['question']}\nAnswer: {e['answer']}\n\n" for e in icl)
    return [f"{head}Question: {r['question']}\nAnswer: " for r in rows]


def text_sets(forget_rows: Sequence[dict], retain_rows: Sequence[dict] | None,
              sets: Mapping[str, Sequence[dict]] | None, max_retain_rows: int = 0,
              lm_tasks: Sequence[str] = (), row_ids: Mapping[str, list[int]] | None = None
              ) -> tuple[dict[str, SetData], list[str], list[str]]:
    """The evaluated sets (forget, holdout, the retain subset, then the extra sets in their
    order, then the utility "set" of lm-eval tasks when there are any), and the names of the
    extra QA sets and extra text sets (the catalog's families run over them). Few-shot
    example sets (``<set>_icl``) are not evaluated themselves. ``row_ids``: the rows' own
    indices in a set of which only a subset is given (``eval.max_rows``)."""
    forget_rows = list(forget_rows or [])
    given = {k: list(v or []) for k, v in (sets or {}).items() if not k.endswith(ICL_SUFFIX)}
    holdout = given.get("holdout") or []
    if holdout and is_qa_rows(holdout):
        raise EvalError("eval set 'holdout' must be text rows")
    for name in ("forget_qa", "retain_qa"):
        if given.get(name) and not is_qa_rows(given[name]):
            raise EvalError(f"eval set {name!r} must be QA rows (question + answer)")
    out = {"forget": SetData("forget", forget_rows,
                             own_indices(row_ids, "forget", len(forget_rows))),
           "holdout": SetData("holdout", holdout, own_indices(row_ids, "holdout", len(holdout))),
           "retain": retain_set(retain_rows, max_retain_rows, row_ids)}
    extra_qa, extra_text = [], []
    for name, rows in given.items():
        if name in ("forget", "retain", UTILITY_SET):
            raise EvalError(f"eval set name {name!r} is reserved")
        if name == "holdout" or not rows:
            continue
        out[name] = SetData(name, rows, own_indices(row_ids, name, len(rows)))
        if is_mc_rows(rows):  # multiple choice: its accuracy (catalog EACH_MC_SET)
            continue
        if is_qa_rows(rows):
            if name not in TEXT_SETS:
                extra_qa.append(name)
        else:
            extra_text.append(name)
    if lm_tasks:
        out[UTILITY_SET] = SetData(UTILITY_SET, [{"task": t} for t in lm_tasks],
                                   list(range(len(lm_tasks))))
    return out, extra_qa, extra_text


def absent(name: str) -> str:
    """Why a text set's metrics cannot be computed when the set has no rows."""
    if name in TEXT_SETS or name in PROTOCOL_SETS:
        return f"no {name} set (eval.sets.{name})"
    return {"forget": "no forget rows",
            "retain": "no retain rows (data.retain)"}.get(name, f"{name} is empty")


def fill_inputs(model, enc, sets: dict[str, SetData], instances, *, max_new_tokens: int,
                batch_size: int, device, progress: Progress,
                verbmem_new_tokens: int = VERBMEM_NEW_TOKENS,
                options: dict | None = None,
                icl: Mapping[str, list[dict]] | None = None) -> dict[str, float]:
    """Greedy continuations, greedy answers, completions, token log-probs and argmax hits of
    the sets whose metrics need them, and the lm-eval tasks; returns the timings.

    ``options`` (the protocol's settings): ``verbmem_gt_tokens`` cuts VerbMem's ground truth
    to its first N tokens (MUSE); ``knowmem_icl`` asks KnowMem questions in MUSE's few-shot
    format (the ``icl`` examples of the set, none when the project has no ``<set>_icl``),
    ``knowmem_new_tokens`` long, cut at ``stop_strings``; ``completion_new_tokens`` is the
    length of the copyright task's completions."""
    opt = dict(options or {})
    timings = {}
    ts = time.time()
    for n in sets_needing(instances, sets, GREEDY_CONTINUATIONS):
        d = sets[n]
        d.prompts, d.gold = (list(x) for x in zip(*map(prompt_and_continuation, d.rows)))
        if opt.get("verbmem_gt_tokens"):
            d.gold = [first_tokens(enc.tok, g, int(opt["verbmem_gt_tokens"])) for g in d.gold]
        d.generated = generate_answers(model, enc, d.prompts, verbmem_new_tokens, "text",
                                       device, batch_size, progress=progress,
                                       stage="verbatim continuations")
    timings["verbmem_s"] = round(time.time() - ts, 3)
    ts = time.time()
    for n in sets_needing(instances, sets, GREEDY_ANSWERS):
        d = sets[n]
        d.gold = [r["answer"] for r in d.rows]
        if opt.get("knowmem_icl"):
            d.prompts = knowmem_prompts(d.rows, (icl or {}).get(n) or [])
            new = int(opt.get("knowmem_new_tokens") or max_new_tokens)
            raw = generate_answers(model, enc, d.prompts, new, "text", device, batch_size,
                                   progress=progress, stage=f"answering {n}",
                                   stop_strings=opt.get("stop_strings") or ())
            d.generated = [cut_at(g, opt.get("stop_strings") or ()).strip() for g in raw]
        else:
            d.prompts = [r["question"] for r in d.rows]
            d.generated = generate_answers(model, enc, d.prompts, max_new_tokens, "qa", device,
                                           batch_size, progress=progress,
                                           stage=f"answering {n}")
    timings["knowmem_s"] = round(time.time() - ts, 3)
    ts = time.time()
    for n in sets_needing(instances, sets, COMPLETIONS):
        d = sets[n]
        d.prompts, d.gold = (list(x) for x in zip(*map(prompt_and_continuation, d.rows)))
        d.completions = generate_answers(model, enc, d.prompts,
                                         int(opt.get("completion_new_tokens") or 400), "text",
                                         device, batch_size, progress=progress,
                                         stage="completions")
    timings["completions_s"] = round(time.time() - ts, 3)
    ts = time.time()
    fill_token_inputs(model, enc, sets, instances, *text_scoring(enc), device=device,
                      batch_size=batch_size, progress=progress,
                      grad_norms=bool(opt.get("mia_gradnorm")))
    timings["logprobs_s"] = round(time.time() - ts, 3)
    ts = time.time()
    for n in sets_needing(instances, sets, TOKEN_HITS):
        seqs = [enc.text(*prompt_and_continuation(r), role="eval") for r in sets[n].rows]
        sets[n].hits = answer_token_hits(model, enc, seqs, device, batch_size,
                                         progress=progress, stage=f"scoring {n} tokens")
    timings["token_hits_s"] = round(time.time() - ts, 3)
    timings.update(fill_lm_eval(model, enc, sets, instances, opt, batch_size, progress))
    timings.update(fill_choices(model, enc, sets, instances, batch_size, device, progress))
    return timings


def text_scoring(enc) -> tuple:
    """``(sequence, text)`` of a text row for the token metrics (:func:`~sga_core.evaluation.
    inputs.fill_token_inputs`): the whole text scored from a start token, its EOS left out."""
    return lambda r: text_sequence(enc, full_text(r), True, False), full_text


def _sample_base(d: SetData, j: int) -> dict:
    base = {"set": d.name, "index": d.indices[j]}
    if d.choice_lls is not None:  # multiple choice (scored by fill_choices)
        return base | sample_fields(d, j)
    if d.logprobs is not None and j < len(d.logprobs):
        base["scored_tokens"] = len(numbers(d.logprobs[j]))
    made = d.generated if d.generated is not None else d.completions
    if made is not None:
        return base | {"prompt": d.prompts[j], "reference": d.gold[j], "generated": made[j]}
    return base | {"reference": full_text(d.rows[j])}


def evaluate_text(model, enc, forget_rows: Sequence[dict], retain_rows: Sequence[dict] | None,
                  sets: Mapping[str, Sequence[dict]] | None, reference_auc: float | dict | None,
                  max_new_tokens: int = 48, batch_size: int = 16, progress: Progress = None,
                  *, max_retain_rows: int = 0, device="cpu",
                  reference_reason: str | None = None,
                  verbmem_new_tokens: int = VERBMEM_NEW_TOKENS,
                  self_reference: bool = False,
                  options: dict | None = None,
                  row_ids: Mapping[str, list[int]] | None = None) -> tuple[dict, list[dict]]:
    """MUSE-style metrics of a loaded model on text rows.

    ``sets``: ``holdout`` (text, never trained on: Min-K% AUC, PrivLeak, perplexity),
    ``forget_qa`` / ``retain_qa`` (QA about the forget / retain documents: KnowMem); other
    QA sets get ``<name>_knowmem``, other text sets ``<name>_perplexity``.
    ``reference_auc`` is the retain reference's AUC of each attack on the same forget /
    holdout texts, by attack (``{"min_k": ..., "loss": ...}``; a number: Min-K%'s alone)
    (``self_reference``: this model is the reference, its own AUCs are used: PrivLeak 0).
    Metrics: the catalog's text metrics (``forget_verbmem``, ``forget_knowmem``,
    ``retain_knowmem``, ``mia_auc``, ``privleak``, ``holdout_perplexity``,
    ``forget_perplexity``, ``retain_perplexity`` and the families; under the copyright
    protocol ``forget_bleu``, ``forget_completion_rouge``, ``fq_gap`` and the lm-eval
    utility, with ``reference_auc`` the retained model's ``{"bleu", "rouge"}``).
    ``options``: the evaluation protocol's settings (default: the demo's). ``row_ids``:
    the rows' own indices where only a subset of a set is given (``eval.max_rows``).
    """
    options = dict(options or {})
    tasks, extra = utility_tasks(options)
    data, extra_qa, extra_text = text_sets(forget_rows, retain_rows, sets, max_retain_rows,
                                           tasks, row_ids)
    _, summary, per_sample = evaluate_catalog(
        TEXT, data, expand(TEXT, qa_sets=extra_qa, text_sets=extra_text, lm_tasks=extra,
                           protocol=options.get("name"),
                           mc_sets=[n for n, d in data.items() if is_mc_rows(d.rows)]),
        partial(fill_inputs, model, enc, max_new_tokens=max_new_tokens,
                batch_size=batch_size, device=device, progress=progress,
                verbmem_new_tokens=verbmem_new_tokens, options=options,
                icl=icl_examples(sets)),
        absent, TEXT_INPUT_KEYS, _sample_base, retain_rows=retain_rows,
        reference=reference_auc, reference_reason=reference_reason,
        self_reference=self_reference, options=options)
    summary["mia_losses"] = finite(mia_losses(data))  # the Reference attack's, as a reference
    summary["rows"] = {"forget": len(data["forget"].rows), "retain": len(data["retain"].rows),
                       **{n: len(list(r or [])) for n, r in (sets or {}).items()}}
    return summary, per_sample


def reference_completions(model, enc, forget_rows: Sequence[dict], batch_size: int = 16,
                          device="cpu", options: dict | None = None,
                          progress: Progress = None) -> dict | None:
    """The retained model's mean BLEU and ROUGE-L recall on the forget completions (the
    copyright task's FQ gap compares against them): ``{"bleu", "rouge"}``."""
    rows = list(forget_rows)
    opt = dict(options or {})
    data = {"forget": SetData("forget", rows, list(range(len(rows))))}
    d = data["forget"]
    d.prompts, d.gold = (list(x) for x in zip(*map(prompt_and_continuation, rows)))
    d.completions = generate_answers(model, enc, d.prompts,
                                     int(opt.get("completion_new_tokens") or 400), "text",
                                     device, batch_size, progress=progress,
                                     stage="reference: completions")
    out = {}
    for key, name in (("bleu", "forget_bleu"), ("rouge", "forget_completion_rouge")):
        spec = spec_of(name, TEXT)
        out[key] = spec.compute(MetricInputs(spec.name, data, spec.on, options=opt)).value
    return out if all(v is not None for v in out.values()) else None
