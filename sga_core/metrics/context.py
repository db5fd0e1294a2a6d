"""What a catalog metric is computed from: the model-side inputs of each evaluated set, the
metrics computed before it, and the retain reference's value. Pure data, no torch.

The evaluation (:mod:`sga_core.evaluation`) fills a :class:`SetData` per evaluated set with
the inputs the catalog's metrics on that set need (the ``needs`` of
:class:`~sga_core.metrics.catalog.MetricSpec`), then calls each metric's ``compute`` with a
:class:`MetricInputs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .result import MetricResult

# the model-side inputs a metric can need (MetricSpec.needs), and what each one is
CANDIDATE_NLLS = "candidate_nlls"
GREEDY_ANSWERS = "greedy_answers"
GREEDY_CONTINUATIONS = "greedy_continuations"
TOKEN_LOGPROBS = "token_logprobs"
TOKEN_HITS = "token_hits"
TOKEN_VOCAB_STATS = "token_vocab_stats"
GRAD_NORMS = "grad_norms"
COMPLETIONS = "completions"
LM_EVAL = "lm_eval"
REFERENCE = "reference"
CHOICE_LOGLIKS = "choice_logliks"
INPUTS = {
    CANDIDATE_NLLS: "mean NLL of each candidate answer of a QA row (the answer, its "
                    "paraphrase, each perturbed answer), scored in padded batches",
    GREEDY_ANSWERS: "greedy answers to the questions (chat template), compared with the "
                    "gold answers",
    GREEDY_CONTINUATIONS: "greedy continuations of the forget texts' prefixes, compared with "
                          "the true continuations",
    TOKEN_LOGPROBS: "the log-probability of each token of each whole text (QA: of each "
                    "answer given its question, its EOS included)",
    TOKEN_VOCAB_STATS: "per token of each whole text (QA: of each answer): its "
                       "log-probability, and the mean and "
                       "variance of the log-probability over the vocabulary (Min-K%++)",
    TOKEN_HITS: "per answer token, whether the model's most likely next token is the true "
                "one (exact memorization, extraction strength)",
    GRAD_NORMS: "per row, the mean over the model's parameters of the 2-norm of the "
                "gradient of its mean token NLL: one forward and backward pass per row "
                "(GradNorm; only with eval.mia_gradnorm)",
    COMPLETIONS: "long greedy completions of the forget prompts (the copyright task), "
                 "compared with the true continuations",
    LM_EVAL: "lm-evaluation-harness task results of the loaded model (utility)",
    REFERENCE: "the retain reference's own value (a model trained without the forget set)",
    CHOICE_LOGLIKS: "the log-likelihood of each choice of a multiple-choice row after its "
                    "prompt, as lm-evaluation-harness scores a multiple_choice task",
}


@dataclass
class SetData:
    """One evaluated set: its rows (``indices`` into the original data) and the model-side
    inputs computed for it (None where no metric on the set needs them)."""

    name: str
    rows: list = field(default_factory=list)
    indices: list[int] = field(default_factory=list)
    nlls: list[dict] | None = None  # CANDIDATE_NLLS: {"answer", "paraphrased", "perturbed"}
    prompts: list[str] | None = None  # what generation was given (questions or prefixes)
    gold: list[str] | None = None  # what the generations are compared with
    generated: list[str] | None = None  # GREEDY_ANSWERS / GREEDY_CONTINUATIONS
    logprobs: list[list[float]] | None = None  # TOKEN_LOGPROBS
    texts: list[str] | None = None  # TOKEN_LOGPROBS: the whole texts (QA: answers) scored
    hits: list[list[bool]] | None = None  # TOKEN_HITS
    vocab_stats: list[dict] | None = None  # TOKEN_VOCAB_STATS: {"logprobs", "mu", "var"}
    grad_norms: list[float | None] | None = None  # GRAD_NORMS
    completions: list[str] | None = None  # COMPLETIONS (gold: the true continuations)
    lm_eval: dict | None = None  # LM_EVAL: task -> {metric: value} or {"error": why}
    choice_lls: list[list[float]] | None = None  # CHOICE_LOGLIKS: per row, per choice

    def split(self, denominator: str = "paraphrased") -> tuple[list, list, list]:
        """:func:`split_scores` of this set's candidate NLLs."""
        return split_scores(self.nlls or [], denominator)


def split_scores(scores: Sequence[dict], denominator: str = "paraphrased"
                 ) -> tuple[list, list, list]:
    """``(nll_answer, nll_denominator, nll_perturbed_lists)`` of candidate NLLs, ready for the
    truth-ratio / probability metrics. ``denominator`` 'paraphrased': the paraphrase where a
    row has one, else the answer; 'answer': always the answer."""
    answer = [s["answer"] for s in scores]
    denom = [s["paraphrased"] if denominator == "paraphrased"
             and s.get("paraphrased") is not None else s["answer"] for s in scores]
    perturbed = [list(s.get("perturbed") or []) for s in scores]
    return answer, denom, perturbed


@dataclass
class MetricInputs:
    """Everything one metric instance computes from.

    ``on`` are the sets it reads (a family member's own set substituted), ``results`` the
    metrics computed before it (by summary name), ``reference`` the retain reference's value
    (None, with ``reference_reason``, when there is none); ``self_reference``: the evaluated
    model is the retain reference itself; ``options`` the evaluation protocol's settings
    (:class:`sga_core.protocols.Protocol`, as a dict)."""

    name: str
    sets: dict[str, SetData]
    on: tuple[str, ...] = ()
    results: dict[str, MetricResult] = field(default_factory=dict)
    reference: Any = None
    reference_reason: str | None = None
    self_reference: bool = False
    options: dict = field(default_factory=dict)  # the protocol's settings (epsilon, ...)
    # a QA evaluation's second reference value: the attacks' AUCs by name (PrivLeak)
    mia_reference: dict | None = None
    mia_reference_reason: str | None = None

    @property
    def data(self) -> SetData:
        """The (first) set the metric reads."""
        return self.sets[self.on[0]]
