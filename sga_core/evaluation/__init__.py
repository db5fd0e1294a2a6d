"""Evaluating runs and models (docs/spec.md#4-metrics): TOFU-style QA metrics and MUSE-style text
metrics, written to ``eval/summary.json`` and ``eval/per_sample.jsonl``.

- ``run``: :func:`evaluate_run` / :func:`evaluate_model`, model loading;
- ``settings``: :class:`EvalSettings`, resolved against a protocol or from a run's config;
- ``rows``: the rows an evaluation scores (set roles, the ``max_rows`` subset);
- ``qa`` / ``text``: the evaluation of a loaded model on QA / text rows;
- ``reference``: the retain reference and its cached values; ``task_reference``: the value
  an evaluation's task needs from it;
- ``inputs``: the model-side inputs (candidate NLLs, token log-probs, greedy generation);
- ``compute``: the catalog's metrics (:mod:`sga_core.metrics.catalog`) from those inputs;
- ``common`` / ``summary``: file names, helpers, reading and printing a summary.
"""

from sga_core.evaluation.common import (
    EVAL_DIR,
    EVAL_LOG,
    PER_SAMPLE_FILE,
    REFERENCE_CACHE_FILE,
    SUMMARY_FILE,
    TOKENS_FILE,
    EvalError,
    retain_subset,
)
from sga_core.evaluation.inputs import (
    generate_answers,
    qa_batches,
    qa_candidates,
    score_qa_candidates,
    text_token_logprobs,
)
from sga_core.evaluation.qa import QA_SAMPLE_KEYS, evaluate_qa
from sga_core.evaluation.reference import (
    Reference,
    forget_rows_key,
    mia_key,
    reference_value,
    resolve_reference,
)
from sga_core.evaluation.run import (
    eval_status,
    evaluate_model,
    evaluate_run,
    load_model_and_tokenizer,
)
from sga_core.evaluation.settings import EvalSettings, settings_from_config
from sga_core.evaluation.summary import format_summary, read_summary
from sga_core.evaluation.text import (
    TEXT_SAMPLE_KEYS,
    evaluate_text,
    full_text,
    prompt_and_continuation,
)

__all__ = [
    "EVAL_DIR", "EVAL_LOG", "PER_SAMPLE_FILE", "QA_SAMPLE_KEYS", "REFERENCE_CACHE_FILE",
    "SUMMARY_FILE", "TEXT_SAMPLE_KEYS", "TOKENS_FILE", "EvalError", "EvalSettings",
    "Reference", "eval_status", "evaluate_model", "evaluate_qa", "evaluate_run",
    "evaluate_text", "forget_rows_key", "format_summary", "full_text", "generate_answers",
    "load_model_and_tokenizer", "mia_key", "prompt_and_continuation", "qa_batches",
    "qa_candidates", "read_summary", "reference_value", "resolve_reference", "retain_subset",
    "score_qa_candidates", "settings_from_config", "text_token_logprobs",
]
