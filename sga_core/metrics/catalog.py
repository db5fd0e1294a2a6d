"""The metric catalog: every metric the evaluation writes, declared once.

An entry (:class:`MetricSpec`) names the summary key, the task kind, the column label, the
direction, one line of help, the reference it follows, the model-side inputs it needs, the
sets it reads, its Results-table column (if any), its per-sample key (if any) and its
``compute`` function. The evaluation expands the catalog over the evaluated sets
(:func:`expand`), computes each entry, and writes exactly these names (:func:`check_names`);
the Results table takes its columns from here (:func:`sga_core.results.table_columns`).

A family is one entry whose name holds ``{set}``: it is computed once per extra evaluation
set (``EACH_QA_SET``: every extra QA set; ``EACH_TEXT_SET``: every extra text set).

Adding a metric = its function (a pure one in this package) + one entry in ``CATALOG``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from . import muse, rouge, tofu
from .context import (
    CANDIDATE_NLLS,
    GREEDY_ANSWERS,
    GREEDY_CONTINUATIONS,
    INPUTS,
    REFERENCE,
    TOKEN_LOGPROBS,
    MetricInputs,
)
from .result import MetricResult, missing

QA, TEXT = "qa", "text"
KINDS = (QA, TEXT)
HIGHER, LOWER, ZERO = "higher", "lower", "zero"  # better when higher / lower / closer to 0
DIRECTIONS = {HIGHER: "higher is better", LOWER: "lower is better", ZERO: "closest to 0 is best"}
EACH_QA_SET, EACH_TEXT_SET = "*qa", "*text"  # a family's set: each extra QA / text set
MIN_K = 0.4  # MUSE / open-unlearning Min-K%

TOFU = "TOFU, Maini et al. 2024; open-unlearning"
MUSE = "MUSE, Shi et al. 2024; open-unlearning"


@dataclass(frozen=True)
class MetricSpec:
    """One metric of the catalog (see the module docstring)."""

    name: str  # the summary key; "{set}" in it makes a family
    kind: str  # QA or TEXT
    label: str  # short column header ("{set}" allowed in a family)
    direction: str  # HIGHER, LOWER or ZERO
    help: str  # one line
    reference: str  # the definition it follows
    needs: tuple[str, ...]  # model-side inputs (context.INPUTS keys)
    compute: Callable[[MetricInputs], MetricResult]
    on: tuple[str, ...] = ()  # the sets it reads (all must have rows); () = none
    after: tuple[str, ...] = ()  # metrics it reads from MetricInputs.results
    column: int | None = None  # its position in the Results table; None: not a column
    sample_key: str | None = None  # the per_sample.jsonl key its per_sample values fill
    keep_per_sample: bool = False  # its per_sample list is kept in summary.json

    @property
    def is_family(self) -> bool:
        return "{set}" in self.name

    @property
    def higher_is_better(self) -> bool | None:
        """True / False, or None for ZERO (closest to 0 is best)."""
        return {HIGHER: True, LOWER: False}.get(self.direction)

    def key(self, set_name: str) -> str:
        """The summary key of this entry (a family's member for ``set_name``)."""
        return self.name.format(set=set_name)


@dataclass(frozen=True)
class Instance:
    """One metric the evaluation computes: its summary key, its entry, the sets it reads."""

    name: str
    spec: MetricSpec
    on: tuple[str, ...]


# --- compute functions: catalog inputs -> the pure metric functions ----------------------------

def _probability(x: MetricInputs) -> MetricResult:
    return tofu.probability(x.data.split()[0])


def _normalized_probability(x: MetricInputs) -> MetricResult:
    answer, _, perturbed = x.data.split()
    return tofu.normalized_probability(answer, perturbed)


def _truth_ratio_score(score: Callable) -> Callable[[MetricInputs], MetricResult]:
    """The set's truth-ratio score; per sample, each row's raw truth ratio."""
    def compute(x: MetricInputs) -> MetricResult:
        _, denom, perturbed = x.data.split()
        raw = tofu.truth_ratio(perturbed, denom)
        if raw.value is None:
            return missing(x.name, raw.reason or "no truth ratios", raw.per_sample)
        s = score(raw)
        return MetricResult(x.name, s.value, raw.per_sample, s.reason)
    return compute


def _rouge_recall(x: MetricInputs) -> MetricResult:
    return rouge.rouge_l_recall(x.data.generated, x.data.gold)


def _rouge_f1(x: MetricInputs) -> MetricResult:
    return rouge.rouge_l_f1(x.data.generated, x.data.gold)


def _model_utility(x: MetricInputs) -> MetricResult:
    """MU over the retain set and every utility set (an extra QA set whose rows all have
    perturbed answers, whatever its name); with none, TOFU's real_authors and world_facts,
    whose absence the reason then names."""
    extra = tofu.utility_sets({n: d.rows for n, d in x.sets.items()})
    sets = ("retain", *extra) if extra else tofu.MODEL_UTILITY_SETS
    res = tofu.model_utility(x.results, sets=sets)
    if res.value is not None:
        return res
    keys = [f"{s}_{m}" for s in sets for m in tofu.MODEL_UTILITY_METRICS]
    why = [f"{k}: {x.results[k].reason}" for k in keys
           if k in x.results and x.results[k].value is None and x.results[k].reason]
    hint = "" if extra else (" (no utility set: add QA sets with perturbed answers, e.g. "
                             "TOFU's real_authors and world_facts)")
    return missing(x.name, f"{res.reason}{hint}" + (f" [{'; '.join(why)}]" if why else ""),
                   res.per_sample)


def _forget_quality(x: MetricInputs) -> MetricResult:
    own = x.results["forget_truth_ratio"].per_sample
    ref = list(own) if x.self_reference else x.reference
    if ref is None:
        return missing(x.name, x.reference_reason or "no retain-reference truth ratios")
    return tofu.forget_quality(own, ref)


def _perplexity(x: MetricInputs) -> MetricResult:
    return muse.perplexity_from_logprobs(x.data.logprobs)


def _mia_auc(x: MetricInputs) -> MetricResult:
    """Min-K% AUC of the first set (members) against the second; per sample, each text's
    Min-K% score (the first set's texts, then the second's)."""
    members, others = (muse.min_k_percent_score(x.sets[s].logprobs, MIN_K) for s in x.on)
    res = muse.auc(members, others)
    return MetricResult(x.name, res.value, members.per_sample + others.per_sample, res.reason)


def _privleak(x: MetricInputs) -> MetricResult:
    mia = x.results["mia_auc"]
    ref = mia.value if x.self_reference and mia.value is not None else x.reference
    if mia.value is None:
        return missing(x.name, mia.reason or "no AUC")
    if ref is None:
        return missing(x.name, x.reference_reason or "no retain-reference AUC")
    return muse.privleak(mia, ref)


def _qa_set(set_name: str, forget: bool) -> list[MetricSpec]:
    """The three TOFU metrics of the forget or retain set."""
    d = LOWER if forget else HIGHER
    tr_help = ("mean(min(TR, 1/TR)): 1 = no preference between true and false answers" if forget
               else "mean(max(0, 1 - TR)): 1 = the true answers strongly preferred")
    return [
        MetricSpec(f"{set_name}_truth_ratio", QA, f"{set_name} TR", HIGHER,
                   f"truth ratio score of the {set_name} rows, {tr_help}",
                   f"{TOFU} {set_name}_truth_ratio", (CANDIDATE_NLLS,),
                   _truth_ratio_score(tofu.truth_ratio_forget_score if forget
                                      else tofu.truth_ratio_retain_score),
                   on=(set_name,), sample_key="truth_ratio"),
        MetricSpec(f"{set_name}_rouge", QA, f"{set_name} ROUGE-L", d,
                   f"ROUGE-L recall of greedy answers against the {set_name} answers",
                   f"{TOFU} {set_name}_Q_A_ROUGE", (GREEDY_ANSWERS,), _rouge_recall,
                   on=(set_name,), column=3 if forget else 4, sample_key="rouge_l_recall"),
        MetricSpec(f"{set_name}_probability", QA, f"{set_name} prob", d,
                   f"mean P(answer | question) = exp(-NLL) of the {set_name} answers",
                   f"{TOFU} {set_name}_Q_A_Prob", (CANDIDATE_NLLS,), _probability,
                   on=(set_name,), column=5 if forget else 6, sample_key="probability"),
    ]


def _knowmem(name: str, on: str, label: str, direction: str, about: str, ref: str,
             column: int | None = None) -> MetricSpec:
    """A KnowMem metric: ROUGE-L F1 of greedy answers to the questions of one QA set."""
    return MetricSpec(name, TEXT, label, direction,
                      f"KnowMem: ROUGE-L F1 of answers to the questions {about}",
                      f"{MUSE} {ref}", (GREEDY_ANSWERS,), _rouge_f1, on=(on,), column=column,
                      sample_key="rouge_l_f1")


def _perplexity_of(set_name: str, label: str, direction: str, what: str,
                   column: int | None = None) -> MetricSpec:
    """The perplexity of one text set (token-weighted ``exp`` of the mean token NLL)."""
    name = "{set}_perplexity" if set_name == EACH_TEXT_SET else f"{set_name}_perplexity"
    return MetricSpec(name, TEXT, label, direction, f"perplexity of {what}",
                      f"{MUSE}-style perplexity", (TOKEN_LOGPROBS,), _perplexity,
                      on=(set_name,), column=column, sample_key="perplexity")


CATALOG: tuple[MetricSpec, ...] = (
    # --- QA (TOFU) ------------------------------------------------------------------------
    *_qa_set("forget", forget=True),
    *_qa_set("retain", forget=False),
    MetricSpec("{set}_truth_ratio", QA, "{set} TR", HIGHER,
               "truth ratio score mean(max(0, 1 - TR)) of a real-world set",
               f"{TOFU} ra/wf_Truth_Ratio", (CANDIDATE_NLLS,),
               _truth_ratio_score(tofu.truth_ratio_retain_score), on=(EACH_QA_SET,),
               sample_key="truth_ratio"),
    MetricSpec("{set}_rouge", QA, "{set} ROUGE-L", HIGHER,
               "ROUGE-L recall of greedy answers on a real-world set",
               f"{TOFU} ra/wf_Q_A_ROUGE", (GREEDY_ANSWERS,), _rouge_recall,
               on=(EACH_QA_SET,), sample_key="rouge_l_recall"),
    MetricSpec("{set}_probability", QA, "{set} prob", HIGHER,
               "normalised probability P(a) / (P(a) + sum of P(perturbed)) on a real-world set",
               f"{TOFU} ra/wf_Q_A_Prob_normalised", (CANDIDATE_NLLS,), _normalized_probability,
               on=(EACH_QA_SET,), sample_key="probability"),
    MetricSpec("model_utility", QA, "MU", HIGHER,
               "Model Utility: harmonic mean of probability, ROUGE-L and truth ratio on the "
               "retain set and each utility set (QA sets with perturbed answers; TOFU: "
               "real_authors, world_facts)",
               f"{TOFU} model_utility", (CANDIDATE_NLLS, GREEDY_ANSWERS), _model_utility,
               after=tuple(f"{s}_{m}" for s in ("retain", "{set}")
                           for m in tofu.MODEL_UTILITY_METRICS),
               column=2, keep_per_sample=True),
    MetricSpec("forget_quality", QA, "FQ", HIGHER,
               "Forget Quality: KS-test p-value of the forget truth ratios against the retain "
               "reference's (higher = closer to never having seen the data)",
               f"{TOFU} forget_quality", (CANDIDATE_NLLS, REFERENCE), _forget_quality,
               on=("forget",), after=("forget_truth_ratio",), column=1, keep_per_sample=True),
    # --- text (MUSE) ----------------------------------------------------------------------
    MetricSpec("forget_verbmem", TEXT, "VerbMem", LOWER,
               "VerbMem: ROUGE-L F1 of 128-token greedy continuations of the forget prefixes",
               f"{MUSE} verbmem_f", (GREEDY_CONTINUATIONS,), _rouge_f1, on=("forget",),
               column=1, sample_key="rouge_l_f1"),
    _knowmem("forget_knowmem", "forget_qa", "KnowMem forget", LOWER, "about the forget "
             "documents", "knowmem_f", column=2),
    _knowmem("retain_knowmem", "retain_qa", "KnowMem retain", HIGHER, "about the retain "
             "documents", "knowmem_r", column=3),
    _knowmem("{set}_knowmem", EACH_QA_SET, "KnowMem {set}", HIGHER, "of an extra QA set",
             "knowmem"),
    MetricSpec("mia_auc", TEXT, "MIA AUC", LOWER,
               "ROC-AUC of Min-K% (k = 40%) scores separating forget from holdout texts "
               "(1 = memorised; the retain reference's value is the target)",
               f"{MUSE} mia_min_k", (TOKEN_LOGPROBS,), _mia_auc, on=("forget", "holdout"),
               sample_key="min_k_score"),
    MetricSpec("privleak", TEXT, "PrivLeak", ZERO,
               "PrivLeak: the MIA AUC relative to the retain reference's, in % (0 = like "
               "never trained on the forget set)",
               f"{MUSE} privleak", (TOKEN_LOGPROBS, REFERENCE), _privleak,
               on=("forget", "holdout"), after=("mia_auc",), column=4),
    _perplexity_of("holdout", "PPL", LOWER, "the holdout texts (never trained on): "
                   "fluency", column=5),
    _perplexity_of("forget", "forget PPL", HIGHER, "the forget texts (higher = less likely)"),
    _perplexity_of("retain", "retain PPL", LOWER, "the retain texts"),
    _perplexity_of(EACH_TEXT_SET, "{set} PPL", LOWER, "the texts of an extra text set"),
)


# --- lookups -------------------------------------------------------------------------------

def metrics_for(kind: str) -> list[MetricSpec]:
    """The catalog entries of a task kind, in catalog order (the order they are computed)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return [s for s in CATALOG if s.kind == kind]


def table_columns(kind: str) -> list[MetricSpec]:
    """The Results-table columns of a task kind, in display order (a row of
    :func:`sga_core.results.results_table` holds each value under ``spec.label``)."""
    return sorted((s for s in metrics_for(kind) if s.column is not None),
                  key=lambda s: s.column)


def sample_keys(kind: str) -> tuple[str, ...]:
    """The per-sample keys the catalog's metrics fill, in catalog order."""
    return tuple(dict.fromkeys(s.sample_key for s in metrics_for(kind) if s.sample_key))


def _pattern(spec: MetricSpec) -> str:
    return re.escape(spec.name).replace(re.escape("{set}"), "(.+)")


def _matches(spec: MetricSpec, name: str) -> bool:
    return spec.name == name or spec.is_family and bool(re.fullmatch(_pattern(spec), name))


def spec_of(name: str, kind: str) -> MetricSpec:
    """The entry a summary key belongs to (a fixed name first, then a family); KeyError for a
    name the catalog does not have."""
    specs = metrics_for(kind)
    fixed = [s for s in specs if s.name == name]
    found = fixed or [s for s in specs if _matches(s, name)]
    if found:
        return found[0]
    raise KeyError(f"{name!r} is not a {kind} metric of the catalog (sga_core.metrics.catalog)")


def check_names(kind: str, names: Iterable[str]) -> None:
    """Raise KeyError unless every name is a catalog metric of ``kind``."""
    for name in names:
        spec_of(name, kind)


def expand(kind: str, qa_sets: Iterable[str] = (), text_sets: Iterable[str] = ()) -> list[Instance]:
    """The metrics to compute for ``kind``: each fixed entry, and each family once per extra
    QA set (``qa_sets``) or text set (``text_sets``), in catalog order."""
    pools = {EACH_QA_SET: list(qa_sets), EACH_TEXT_SET: list(text_sets)}
    out: list[Instance] = []
    for spec in metrics_for(kind):
        wild = [o for o in spec.on if o in pools]
        if not wild:
            out.append(Instance(spec.name, spec, spec.on))
            continue
        for s in pools[wild[0]]:
            out.append(Instance(spec.key(s), spec, tuple(s if o in pools else o
                                                          for o in spec.on)))
    names = [i.name for i in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"evaluation sets give the same metric name twice: {', '.join(dup)}")
    return out


def problems() -> list[str]:
    """What is wrong with the catalog itself (empty when it is sound): unique names per kind,
    known kinds, directions and inputs, families over a set wildcard, ``after`` naming
    metrics that come earlier, distinct column positions."""
    out = []
    for kind in KINDS:
        specs = metrics_for(kind)
        seen: list[MetricSpec] = []
        for s in specs:
            if s.name in {t.name for t in seen}:
                out.append(f"{s.name}: listed twice")
            if s.direction not in DIRECTIONS:
                out.append(f"{s.name}: unknown direction {s.direction!r}")
            out += [f"{s.name}: unknown input {n!r}" for n in s.needs if n not in INPUTS]
            if s.is_family != any(o in (EACH_QA_SET, EACH_TEXT_SET) for o in s.on):
                out.append(f"{s.name}: a family name needs a set wildcard in `on`, and back")
            out += [f"{s.name}: reads {a!r}, which is not computed before it"
                    for a in s.after if not any(_matches(t, a) for t in seen)]
            if not (s.label and s.help and s.reference and callable(s.compute)):
                out.append(f"{s.name}: label, help, reference and compute are required")
            seen.append(s)
        cols = [s.column for s in specs if s.column is not None]
        if len(cols) != len(set(cols)):
            out.append(f"{kind}: two columns share a position")
    out += [f"{s.name}: kind {s.kind!r}" for s in CATALOG if s.kind not in KINDS]
    return out
