"""Stress tests: does the forgetting hold? (docs/stress-tests.md)

One file per attack, each registering itself (:class:`~sga_core.stress.base.Attack`):

- ``relearning``: ``relearn`` (a few fine-tuning steps on a share of the forget set, the
  rest re-scored) and ``benign`` (on retain rows or a given text);
- ``quantization``: ``quant4``, ``quant8`` (round-to-nearest, groups of 128);
- ``prompts``: ``paraphrase``, ``fewshot``, ``roleplay``.

``scoring`` holds the forget metrics re-scored and the recovery; ``run`` runs the attacks
on a run folder or a model and writes ``stress/<attack>.json``; ``results`` reads them back.
"""

from sga_core.stress import prompts, quantization, relearning  # noqa: F401  (registration)
from sga_core.stress.base import REGISTRY, Attack, Case, StressContext, StressSettings
from sga_core.stress.scoring import MIN_GAP, recovery

__all__ = ["MIN_GAP", "REGISTRY", "Attack", "Case", "StressContext", "StressSettings",
           "recovery"]
