"""What every unlearning method provides, and the data it is built from.

A method turns the data into *units* (one per forget sample, or per training row for
fine-tuning). A unit holds the sequences that its loss needs (the forget answer, its normal
answers, a paired retain row, ...). The trainer pads all sequences of a batch into one batch,
runs one forward and one backward, and asks the method for one loss value per unit; the batch
loss is the mean over units (SPEC 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from sga_core.encoding import Encoder, Sequence


@dataclass
class MethodData:
    """Loaded rows handed to :meth:`Method.build_units`."""

    kind: str  # "qa" or "text"
    forget: list[dict]
    retain: list[dict] = field(default_factory=list)
    normals: Any = None  # sga_core.data.NormalTable or None
    idk_templates: list[str] = field(default_factory=list)


@dataclass
class Unit:
    index: int  # forget (or training) row index
    seqs: list[Sequence]

    @property
    def max_len(self) -> int:
        return max(len(s) for s in self.seqs)


@dataclass
class SeqStats:
    """Per-sequence results of one forward pass over a padded batch."""

    mean_nll: Any  # tensor [n_seq]
    sum_nll: Any  # tensor [n_seq]
    n_tokens: Any  # tensor [n_seq]
    unit_ids: Any  # tensor [n_seq], position of the owning unit within the local batch
    roles: list[str]
    logits: Any = None  # tensor [n_seq, T, V], for methods that need the distribution
    labels: Any = None
    ref: SeqStats | None = None  # the frozen reference model's stats (same sequences)


class Method:
    """Base class. Subclasses set ``name``, ``Config`` (a dataclass built with
    :func:`sga_core.config.param`) and ``needs``, and implement the two methods below."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    Config: ClassVar[type]
    needs: ClassVar[frozenset[str]] = frozenset()  # of "retain", "normals", "reference"
    needs_logits: ClassVar[bool] = False
    unlearning: ClassVar[bool] = True  # False for plain fine-tuning (``prepare``)

    def __init__(self, cfg):
        self.cfg = cfg

    def build_units(self, data: MethodData, enc: Encoder) -> list[Unit]:
        raise NotImplementedError

    def unit_losses(self, stats: SeqStats, n_units: int):
        """Return a tensor ``[n_units]`` of per-unit losses (the optimizer minimizes the mean)."""
        raise NotImplementedError

    def describe(self) -> str:
        return self.title or self.name

    # helpers -----------------------------------------------------------------------------
    @staticmethod
    def weighted_sum(stats: SeqStats, weights, n_units: int, values=None):
        """Sum ``weights[i] * values[i]`` (default the mean NLL) into the owning units."""
        import torch

        values = stats.mean_nll if values is None else values
        w = torch.as_tensor(weights, dtype=values.dtype, device=values.device)
        out = torch.zeros(n_units, dtype=values.dtype, device=values.device)
        return out.index_add(0, stats.unit_ids, w * values)

    @staticmethod
    def role_mask(stats: SeqStats, *roles: str):
        import torch

        return torch.tensor([r in roles for r in stats.roles], device=stats.mean_nll.device)


def forget_with_retain(data: MethodData, enc: Encoder, with_retain: bool = True) -> list[Unit]:
    """One unit per forget row: its forget answer, plus its paired retain row if asked."""
    return [Unit(i, [enc.row(row, data.kind, role="forget", forget_index=i)] +
                 ([paired_retain(data, enc, i)] if with_retain else []))
            for i, row in enumerate(data.forget)]


def paired_retain(data: MethodData, enc: Encoder, i: int, role: str = "retain") -> Sequence:
    """The retain row paired with forget row ``i`` (cycled through the retain set)."""
    if not data.retain:
        raise ValueError("this method needs retain data, and the retain set is empty")
    row = data.retain[i % len(data.retain)]
    return enc.row(row, data.kind, role=role, retain_index=i % len(data.retain))
