"""What every stress attack shares: the registry, the settings common to all, and the case
it hands back (docs/stress-tests.md); the context an attack runs in is
:mod:`sga_core.stress.context`. Nothing here loads or scores a model, so the readers of
result files may ask the registry.

An attack is a small class in a file of its own (:mod:`sga_core.stress.attacks`) with a
``name`` (the CLI's ``--attacks`` key) and a ``run`` that, given the loaded unlearned model
and its data (:class:`~sga_core.stress.context.StressContext`), returns its cases: per
result key (one, or one per step count of a relearning trajectory) a list of
:class:`Case`, one per seed or template. An attack never changes the model it is given: it
works on a copy, or only on the prompts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from sga_core.params import param

REGISTRY: dict[str, type[Attack]] = {}

#: the data kinds a stress test scores (docs/stress-tests.md#text-data)
KINDS = {"qa": "question-answer", "text": "text"}

#: the types a field of a case's ``info`` may be declared as (``Attack.info_fields``; the
#: result files are checked against them, sga_core.runs.validate)
INFO_TYPES = (int, float, str, bool, dict[str, str], list[int])

#: bounds of the settings every attack shares (a seed is a whole relearning trajectory)
MAX_STRESS_SEEDS = 20
MAX_SEED = 2**31 - 1


@dataclass
class CommonSettings:
    """The settings every attack shares: typed ``param()`` fields. Each attack adds its own
    (its ``Settings``); :func:`sga_core.stress.settings.settings_class` joins them into the
    one ``StressSettings`` that the ``stress`` command's flags, a queued request and a
    result's ``settings`` come from (``stress --help`` lists them)."""

    seeds: list[int] = param([0, 1, 2], "Seeds of the seeded attacks (relearning rows, "
                             "few-shot examples); intervals run over them "
                             f"(at most {MAX_STRESS_SEEDS}, each 0 to {MAX_SEED}).")
    rouge: bool = param(True, "Generate answers for ROUGE-L (the slow part on a CPU).")

    @staticmethod
    def settings_problem(settings) -> str | None:
        return list_problem("seeds", settings.seeds, 0, MAX_SEED, MAX_STRESS_SEEDS)


def list_problem(name: str, items, lo: int, hi: int, most: int) -> str | None:
    """What is wrong with the whole-number list setting ``name`` (None: nothing): at least
    one item, at most ``most`` distinct ones, each ``lo`` to ``hi``."""
    if not isinstance(items, list) or not items:
        return f"{name}: give at least one"
    if len(set(items)) > most:
        return f"{name}: {len(set(items))} is too many (at most {most})"
    bad = next((v for v in items if isinstance(v, bool) or not isinstance(v, int)
                or not lo <= v <= hi), None)
    if bad is not None:
        return f"{name}: {bad!r} is outside {lo}..{hi}"
    return None


@dataclass(frozen=True)
class FormChoice:
    """A setting of an attack that the pages' stress forms offer as a choice: a selectbox
    ``label`` with the words of each value (``choices``, the first one preselected); the
    value "" leaves the setting at its default (it is left out of the request). ``said``:
    how a chosen value reads in the page's "Queued ..." line (``{value}`` filled in)."""

    key: str  # the widget's key under the form: runs.stress_<key>, results.stress_<key>
    setting: str  # the settings field it sets
    label: str
    choices: dict[str, str]
    help: str = ""
    said: str = ""


@dataclass
class Case:
    """One attacked evaluation: which rows were evaluated (indices into the forget set),
    the question each was asked with, which rows (of ``attack_set``) the attack used, and
    the attacked model's per-row scores (``prob``, ``rouge``, ``generated``)."""

    label: str  # "seed 0", a template's name, "" for a single case
    seed: int | None
    eval_rows: list[int]
    scores: list[dict]
    attack_rows: list[int] = field(default_factory=list)
    attack_set: str | None = None  # "forget", "retain", "text" or None (no training)
    questions: list[str] | None = None  # None: the plain questions
    reason: str | None = None  # why the case could not be run (scores empty)
    info: dict | None = None  # what else a reader needs (where the questions came from)
    #: the recovery's two ends when they are not the unlearned model's and the Original's
    #: plain scores (the probe: its readings of the Retained model and the Original):
    #: ``{"unlearned": [score per eval row] or None, "original": ..., "reason": why
    #: one is missing or None}``
    baselines: dict | None = None


class Attack:
    """One attack, and everything the surfaces need to know of it, declared in its own file
    of :mod:`sga_core.stress.attacks` (docs/stress-tests.md#add-an-attack). Subclasses set
    ``name``, ``label``, ``description`` and :meth:`run`; the rest has defaults:

    - ``rank``: the display order; ``default``: whether ``stress`` without ``--attacks``
      (and the pages' preselection) runs it; ``kinds``: the data kinds it attacks (on any
      other it writes one "not applicable" case);
    - ``Settings``: a dataclass of typed ``param()`` fields, its own settings (flags, the
      request, a result's ``settings``), their names unique among the attacks;
      :meth:`settings_problem` checks them together; ``form``: those the pages' stress
      forms offer (:class:`FormChoice`);
    - :meth:`keys`: the result files it writes (``stress/<key>.json``), :meth:`owns` and
      :meth:`key_order` place a key in the "Does it hold?" table;
    - ``info_fields``: what a case's ``info`` may hold (name -> one of :data:`INFO_TYPES`;
      the result files are checked against them), and
      :meth:`case_words`: how it reads where the result is shown.
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    description: ClassVar[str] = ""
    rank: ClassVar[int] = 100
    default: ClassVar[bool] = True
    kinds: ClassVar[tuple[str, ...]] = tuple(KINDS)
    Settings: ClassVar[type | None] = None
    form: ClassVar[tuple[FormChoice, ...]] = ()
    info_fields: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        name = cls.__dict__.get("name")
        if not name:
            return  # a base shared by several attacks (relearning, quantization)
        old = REGISTRY.get(name)
        if old is not None and (old.__module__, old.__qualname__) != (cls.__module__,
                                                                       cls.__qualname__):
            raise ValueError(f"attack name {name!r} is already registered by "
                             f"{old.__module__}.{old.__qualname__}")
        unknown = set(cls.kinds) - set(KINDS)
        if unknown or not cls.kinds:
            raise ValueError(f"attack {name!r}: kinds must be some of {list(KINDS)}, got "
                             f"{list(cls.kinds)}")
        odd = [k for k, t in cls.info_fields.items() if t not in INFO_TYPES]
        if odd:
            raise ValueError(f"attack {name!r}: info field {odd[0]!r} must be one of the "
                             f"types {[getattr(t, '__name__', str(t)) for t in INFO_TYPES]}")
        for other in REGISTRY.values():
            clash = {k for k in set(cls.info_fields) & set(other.info_fields)
                     if cls.info_fields[k] != other.info_fields[k]} if other.name != name \
                else set()
            if clash:
                raise ValueError(f"attack {name!r}: info field {sorted(clash)[0]!r} has "
                                 f"another type in attack {other.name!r}")
        REGISTRY[name] = cls

    @classmethod
    def keys(cls, settings) -> list[str]:
        """The result keys this attack writes with ``settings`` (one file each)."""
        return [cls.name]

    @classmethod
    def owns(cls, key: str) -> bool:
        """Whether result key ``key`` is one this attack writes (with any settings)."""
        return key == cls.name

    @classmethod
    def key_order(cls, key: str) -> int:
        """Where ``key`` stands among this attack's keys (their table columns)."""
        return 0

    @classmethod
    def settings_problem(cls, settings) -> str | None:
        """What is wrong with this attack's settings taken together (None: nothing)."""
        return None

    @classmethod
    def case_words(cls, info: dict) -> str | None:
        """A case's ``info`` in words, for the hover of its table cell (None: nothing)."""
        return None

    def cases(self, ctx) -> dict[str, list[Case]]:
        """:meth:`run`, or on a kind of data the attack does not take its one case: not
        applicable."""
        if ctx.kind not in self.kinds:
            takes = " and ".join(KINDS[k] for k in self.kinds)
            return {key: [Case("", None, [], [], reason=f"not applicable: {ctx.kind} data "
                               f"(this attack takes {takes} data only)")]
                    for key in self.keys(ctx.settings)}
        return self.run(ctx)

    def run(self, ctx) -> dict[str, list[Case]]:  # pragma: no cover
        """The attack on ``ctx`` (a :class:`~sga_core.stress.context.StressContext`): per
        result key its cases."""
        raise NotImplementedError


def seeded_rows(n: int, share: float, seed: int) -> list[int]:
    """``max(1, round(share * n))`` row indices of ``range(n)`` drawn by ``seed`` (sorted);
    at most ``n - 1``, so at least one row is left to evaluate."""
    import random

    if n < 2:
        raise ValueError(f"relearning needs at least 2 forget rows (one to train on, one to "
                         f"evaluate), the forget set has {n}")
    k = min(n - 1, max(1, round(share * n)))
    return sorted(random.Random(seed).sample(range(n), k))
