"""The context a stress attack runs in: the unlearned model as loaded, its encoder and data,
the settings, and how to score rows (docs/stress-tests.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class StressContext:
    """The unlearned model as loaded, its encoder and data, and how to score rows."""

    model: Any
    enc: Any
    forget_rows: list[dict]
    retain_rows: list[dict]
    settings: Any  # a StressSettings (sga_core.stress.settings): every attack's settings
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
    #: the model the unlearned one came from (a folder, hub id or ``embedded:...``; None:
    #: not given) and the dtype the models load in: an attack that reads the Original's
    #: activations (ablate) loads it
    original: str | None = None
    dtype: str = "float32"
    #: the Retained model (trained without the forget set; None: not known): the floor of
    #: an attack whose recovery is measured between two control models (probe)
    retained: str | None = None

    def score(self, model, rows: Sequence[int], questions: Sequence[str] | None = None,
              stage: str = "scoring", layers: bool = True) -> list[dict]:
        """Per forget row of ``rows``: its answer's probability under ``model`` asked with
        ``questions`` (default: the row's own question), its token record with the layer
        view (``layers``: the Token probabilities page shows attacked models from these),
        and with :attr:`settings.rouge` the greedy answer and its ROUGE-L recall."""
        from sga_core.stress.scoring import score_rows

        qs = list(questions) if questions is not None else [
            self.forget_rows[i]["question"] for i in rows]
        answers = [self.forget_rows[i]["answer"] for i in rows]
        return score_rows(model, self.enc, qs, answers, self.device, self.batch_size,
                          self.max_new_tokens if self.settings.rouge else 0,
                          progress=self.progress, stage=stage, kind=self.kind,
                          layers=layers)

    def train_seq(self, row: dict):
        """A row as relearning trains on it: a QA pair's answer after its question, or a
        text row's whole passage."""
        if self.kind == "text":
            return self.enc.text("", row["text"])
        return self.enc.qa(row["question"], row["answer"])

    def report(self, stage: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)
