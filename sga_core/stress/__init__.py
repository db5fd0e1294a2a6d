"""Stress tests: does the forgetting hold? (docs/stress-tests.md)

One file per attack in :mod:`sga_core.stress.attacks`, found by discovery; each declares
there everything the surfaces need (:class:`~sga_core.stress.base.Attack`). ``relearning``
and ``quantization`` hold what several attacks share, ``paraphrases`` writes reworded
questions, ``settings`` joins the attacks' settings into :class:`StressSettings`,
``scoring`` re-scores the forget rows and computes the recovery, ``run`` runs the attacks on
a run folder or a model and writes ``stress/<key>.json``, ``results`` reads them back.
"""

from sga_core.stress import attacks  # noqa: F401  (discovers the attacks)
from sga_core.stress.base import REGISTRY, Attack, Case
from sga_core.stress.context import StressContext
from sga_core.stress.scoring import MIN_GAP, recovery
from sga_core.stress.settings import settings_class


def __getattr__(name: str):
    """``StressSettings``: the settings class of the attacks registered now (an attack
    registered later, as a test's, is in it too)."""
    if name == "StressSettings":
        return settings_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["MIN_GAP", "REGISTRY", "Attack", "Case", "StressContext", "StressSettings",
           "recovery", "settings_class"]
