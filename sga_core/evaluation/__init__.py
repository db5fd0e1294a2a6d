"""Evaluating runs and models (SPEC 4): TOFU-style QA metrics and MUSE-style text metrics,
written to ``eval/summary.json`` and ``eval/per_sample.jsonl``."""

from sga_core.evaluation.run import *  # noqa: F403
from sga_core.evaluation.run import __all__  # noqa: F401
