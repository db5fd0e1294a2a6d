"""What every stress attack shares: the registry, the context an attack runs in, and the
case it hands back (docs/stress-tests.md).

An attack is a small class with a ``name`` (the CLI's ``--attacks`` key) and a ``run``
that, given the loaded unlearned model and its data (:class:`StressContext`), returns its
cases: per result key (``quant4``; ``relearn-10`` and ``relearn-50`` from one trajectory)
a list of :class:`Case`, one per seed or template. An attack never changes the model it is
given: it works on a copy, or only on the prompts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sga_core.params import param

REGISTRY: dict[str, type[Attack]] = {}

#: bounds of the settings (a seed is a whole relearning trajectory; a step count is one
#: trajectory's length; a learning rate above 1 only turns the weights into NaN)
MAX_STRESS_SEEDS = 20
MAX_SEED = 2**31 - 1
MAX_RELEARN_STEPS = 100_000
MAX_LR = 1.0


@dataclass
class StressSettings:
    """The attacks' knobs: typed ``param()`` fields, so the ``stress`` command's flags and
    the YAML of a result's ``settings`` come from here (``stress --help`` lists them)."""

    seeds: list[int] = param([0, 1, 2], "Seeds of the seeded attacks (relearning rows, "
                             "few-shot examples); intervals run over them "
                             f"(at most {MAX_STRESS_SEEDS}, each 0 to {MAX_SEED}).")
    relearn_steps: list[int] = param([10, 50], "Relearning: optimizer steps after which the "
                                     "forget rows are re-scored (one trajectory; each 1 to "
                                     f"{MAX_RELEARN_STEPS}).")
    relearn_share: float = param(0.1, "Relearning: share of the forget rows trained on "
                                 "(at least 1, never all).", min=0.0, max=1.0)
    relearn_lr: float | None = param(None, "Relearning learning rate (default: the run's "
                                     "training lr, else 1e-5).", min=0.0, max=MAX_LR)
    relearn_batch_size: int = param(4, "Relearning: rows per step.", min=1, max=4096)
    benign_text: str | None = param(None, "Benign relearning on this text file (blank-line "
                                    "separated paragraphs) instead of retain rows.")
    quant_group_size: int = param(128, "Quantization: weights per group along the input "
                                  "dimension.", min=1, max=2**20)
    quant_symmetric: bool = param(True, "Quantization: symmetric absmax (else asymmetric "
                                  "min-max with a zero point).")
    fewshot_k: int = param(3, "Few-shot: retain QA pairs before each question.", min=1,
                           max=64)
    templates: str | None = param(None, "Role-play templates YAML (default: "
                                  "assets/attacks/roleplay.yaml).")
    paraphrase_backend: str | None = param(
        None, "Paraphrases: a normals backend with a prompt (local, openai) that rewords the "
        "forget questions without a paraphrased_question (empty: only the data's).")
    paraphrase_model: str | None = param(None, "Paraphrases: the backend's model (empty: "
                                         "its default, the embedded SmolLM2 or gpt-4o-mini).")
    paraphrase_base_url: str | None = param(None, "Paraphrases: an OpenAI-compatible "
                                            "server's base URL (openai only; empty = "
                                            "OpenAI).", advanced=True)
    paraphrase_timeout: float = param(60.0, "Paraphrases: seconds one request to the "
                                      "server may take in all (openai only); one that "
                                      "times out is tried once more, then the server is "
                                      "taken for hung.", min=1.0, max=3600.0, advanced=True)
    paraphrase_template: str | None = param(None, "Paraphrases: the prompt (a normals "
                                            "template YAML; default: "
                                            "assets/attacks/paraphrase.yaml).", advanced=True)
    keep: bool = param(False, "Keep the relearned copies under stress/kept/ (else deleted).")
    rouge: bool = param(True, "Generate answers for ROUGE-L (the slow part on a CPU).")

    def settings_problem(self) -> str | None:
        """Settings each valid alone but not together, and the lists' items (params.from_dict
        asks, so a bad setting is refused before any model loads)."""
        problem = self.list_problem()
        if problem:
            return problem
        if self.paraphrase_backend:
            from sga_core.stress.paraphrases import backend_problem

            return backend_problem(self.paraphrase_backend, self.paraphrase_base_url)
        if self.paraphrase_model or self.paraphrase_base_url or self.paraphrase_template:
            return ("paraphrase_model/base_url/template: they set how paraphrases are "
                    "generated; choose a paraphrase_backend too (local or openai)")
        return None


    def list_problem(self) -> str | None:
        """What is wrong with ``seeds`` or ``relearn_steps`` (None: nothing)."""
        for name, items, lo, hi, most in (
                ("seeds", self.seeds, 0, MAX_SEED, MAX_STRESS_SEEDS),
                ("relearn_steps", self.relearn_steps, 1, MAX_RELEARN_STEPS, 20)):
            if not isinstance(items, list) or not items:
                return f"{name}: give at least one"
            if len(set(items)) > most:
                return f"{name}: {len(set(items))} is too many (at most {most})"
            bad = next((v for v in items if isinstance(v, bool) or not isinstance(v, int)
                        or not lo <= v <= hi), None)
            if bad is not None:
                return f"{name}: {bad!r} is outside {lo}..{hi}"
        return None

    def check(self) -> None:
        """ConfigError naming the first bad setting (settings built without from_dict)."""
        from sga_core.params import ConfigError, validate_fields

        validate_fields(self)
        problem = self.settings_problem()
        if problem:
            raise ConfigError(problem)


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


@dataclass
class StressContext:
    """The unlearned model as loaded, its encoder and data, and how to score rows."""

    model: Any
    enc: Any
    forget_rows: list[dict]
    retain_rows: list[dict]
    settings: StressSettings
    device: str = "cpu"
    batch_size: int = 16
    max_new_tokens: int = 48
    train_lr: float | None = None  # the run's own learning rate, when it is a run
    keep_dir: Any = None  # where --keep saves relearned copies
    progress: Callable[[str, int, int], None] | None = None
    #: "qa", or "text": each forget row a passage's prefix (``question``) and continuation
    #: cut to the VerbMem tokens (``answer``), its whole passage in ``text``
    #: (:func:`sga_core.stress.rows.text_rows`)
    kind: str = "qa"

    def score(self, model, rows: Sequence[int], questions: Sequence[str] | None = None,
              stage: str = "scoring") -> list[dict]:
        """Per forget row of ``rows``: its answer's probability under ``model`` asked with
        ``questions`` (default: the row's own question), and with :attr:`settings.rouge`
        the greedy answer and its ROUGE-L recall."""
        from sga_core.stress.scoring import score_rows

        qs = list(questions) if questions is not None else [
            self.forget_rows[i]["question"] for i in rows]
        answers = [self.forget_rows[i]["answer"] for i in rows]
        return score_rows(model, self.enc, qs, answers, self.device, self.batch_size,
                          self.max_new_tokens if self.settings.rouge else 0,
                          progress=self.progress, stage=stage, kind=self.kind)

    def train_seq(self, row: dict):
        """A row as relearning trains on it: a QA pair's answer after its question, or a
        text row's whole passage."""
        if self.kind == "text":
            return self.enc.text("", row["text"])
        return self.enc.qa(row["question"], row["answer"])

    def report(self, stage: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)


class Attack:
    """One attack: subclasses set ``name``, ``label``, ``description`` and ``run``."""

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    description: ClassVar[str] = ""
    rank: ClassVar[int] = 100  # display order
    #: it rewords or wraps the forget questions, so on text data (a passage has no
    #: question) it is not applicable
    asks_questions: ClassVar[bool] = False

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.name:
            REGISTRY[cls.name] = cls

    def keys(self, settings: StressSettings) -> list[str]:
        """The result keys this attack writes (one file each)."""
        return [self.name]

    def cases(self, ctx: StressContext) -> dict[str, list[Case]]:
        """:meth:`run`, or for a question attack on text data its one case: not
        applicable."""
        if self.asks_questions and ctx.kind == "text":
            return {self.name: [Case("", None, [], [], reason="not applicable: text data "
                                     "(this attack rewords or wraps questions; a passage "
                                     "has none)")]}
        return self.run(ctx)

    def run(self, ctx: StressContext) -> dict[str, list[Case]]:  # pragma: no cover
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
