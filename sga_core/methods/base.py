"""What every unlearning method provides, and the data it is built from.

A method turns the data into *units* (one per forget sample, or per training row for
fine-tuning). A unit holds the sequences that its loss needs (the forget answer, its normal
answers, a paired retain row, ...). The trainer pads all sequences of a batch into one batch,
runs one forward and one backward, and asks the method for one loss value per unit; the batch
loss is the mean over units (docs/spec.md#12-coefficients-and-the-loss).

A subclass that sets ``name`` registers itself (:data:`REGISTRY`); the package discovers every
module in ``sga_core/methods/``, so one file is the whole registration. Everything particular
to a method lives on its class: what data it needs, the setting a sweep varies, how its
settings read in words, checks on the training setup, and any special step (adaptive r).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from sga_core.model.encoding import Encoder, Sequence
from sga_core.model.forward import SeqStats

NEEDS = ("retain", "normals", "reference")


class StopTraining(Exception):
    """Raised (by the trainer or a method's step) to end a run early in ``state``."""

    def __init__(self, state: str, reason: str):
        super().__init__(reason)
        self.state = state
        self.reason = reason
REGISTRY: dict[str, type[Method]] = {}


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
    # the length batches are grouped by: set by the trainer to the forget row's own length,
    # so the data order never depends on normals, retain rows or the method
    # (docs/spec.md#15-data-order)
    order_len: int | None = None

    @property
    def max_len(self) -> int:
        return max(len(s) for s in self.seqs)

    @property
    def sort_len(self) -> int:
        """The length batching groups by: ``order_len`` when set, else the longest sequence."""
        return self.max_len if self.order_len is None else self.order_len


class Method:
    """Base class. Subclasses set ``name``, ``Config`` (a dataclass built with
    :func:`sga_core.params.param`) and ``needs``, and implement :meth:`build_units` and
    :meth:`unit_losses`; the hooks below have neutral defaults."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    Config: ClassVar[type]
    needs: ClassVar[frozenset[str]] = frozenset()  # of NEEDS
    # True: SeqStats.token_logits, the logits of the scored tokens [N, V] (their rows in
    # token_rows); "full": also SeqStats.logits [B, T, V] of every position (costly)
    needs_logits: ClassVar[bool | str] = False
    unlearning: ClassVar[bool] = True  # False for plain fine-tuning (``prepare``)
    rank: ClassVar[int] = 50  # display order in lists (lower first)
    # False: "I don't know" refusals cannot stand in for its normal answers (AltPO prefers
    # alternate answers); the Train page and --idk-normals offer them only where True
    idk_normals: ClassVar[bool] = True
    sweep_param: ClassVar[str | None] = None  # the setting a sweep varies (SGA: "r")
    sweep_default: ClassVar[str] = ""  # the values a sweep offers first ("" = from its bounds)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if not name:
            return  # an abstract helper class
        old = REGISTRY.get(name)
        if old is not None and (old.__module__, old.__qualname__) != (cls.__module__,
                                                                       cls.__qualname__):
            raise ValueError(f"method name {name!r} is already registered by "
                             f"{old.__module__}.{old.__qualname__}")
        unknown = set(cls.needs) - set(NEEDS)
        if unknown:
            raise ValueError(f"method {name!r}: unknown needs {sorted(unknown)} (known: "
                             f"{list(NEEDS)})")
        REGISTRY[name] = cls

    def __init__(self, cfg):
        self.cfg = cfg

    def build_units(self, data: MethodData, enc: Encoder) -> list[Unit]:
        raise NotImplementedError

    def unit_losses(self, stats: SeqStats, n_units: int):
        """Return a tensor ``[n_units]`` of per-unit losses (the optimizer minimizes the mean)."""
        raise NotImplementedError

    # hooks ---------------------------------------------------------------------------------
    @classmethod
    def id_parts(cls, args: dict) -> list[str]:
        """Words for a run id of this method with settings ``args`` (the sweep setting)."""
        p = cls.sweep_param
        if p is None or args.get(p) is None:
            return []
        v = float(args[p])
        return [p + ("-" if v < 0 else "") + f"{abs(v):g}".replace(".", "p")]

    def explain(self) -> str | None:
        """The settings in words, for the Train page (None: nothing to add)."""
        return None

    def check_training(self, training, distributed_type: str) -> None:
        """Raise ValueError when the training setup cannot serve this method."""

    def step(self, trainer, batch: list[int], step: int) -> dict | None:
        """A special optimizer step (None: the trainer's standard step)."""
        return None

    def log_fields(self) -> dict:
        """Values the method logs with every step (metrics.jsonl), e.g. the current r."""
        return {}

    @classmethod
    def curve_names(cls, args: dict) -> dict[str, str]:
        """What this method's logged curves (metrics.jsonl keys) hold, where the key's name
        would mislead, e.g. ``{"forget_nll": "retain NLL"}``; charts show these names."""
        return {}

    @classmethod
    def log_names(cls, args: dict) -> dict[str, str]:
        """The names ``train.log`` gives the logged NLLs where the key's name would mislead,
        e.g. ``{"forget_nll": "retain_nll"}`` for a run that learns only retain rows."""
        return {}

    def attach(self, model, ref_model=None) -> None:
        """Called once the models are loaded, before the optimizer exists and before any
        forward: register forward hooks, freeze parameters (RMU). ``ref_model`` is the frozen
        reference when the method needs one (it may be ``model`` itself)."""

    def detach(self) -> None:
        """Undo :meth:`attach` (remove hooks, unfreeze): for callers that reuse the model."""

    def state_dict(self) -> dict:
        """What of this method changes while it trains, for a checkpoint to keep: its
        settings (adaptive r moves ``r``). A method with other state adds it."""
        import dataclasses

        return {"cfg": dataclasses.asdict(self.cfg)} if dataclasses.is_dataclass(self.cfg) \
            else {}

    def load_state_dict(self, state: dict) -> None:
        """Take back :meth:`state_dict`'s values when a run resumes from a checkpoint."""
        for key, value in (state.get("cfg") or {}).items():
            if hasattr(self.cfg, key):
                setattr(self.cfg, key, value)

    def finish(self, trainer, state: str) -> bool:
        """Called once after the last step, before the final probes, answer NLL and saving,
        with the run's state so far. A method may change ``trainer.model`` here (Task
        Vector's weight arithmetic, WHP's two-model wrapper). Return True when the method has
        saved (or deliberately not saved) the run's model itself."""
        return False

    # helpers -----------------------------------------------------------------------------
    @staticmethod
    def weighted_sum(stats: SeqStats, weights, n_units: int, values=None):
        """Sum ``weights[i] * values[i]`` (default the mean NLL) into the owning units."""
        import torch

        values = stats.mean_nll if values is None else values
        w = torch.as_tensor(weights, dtype=values.dtype, device=values.device)
        out = torch.zeros(n_units, dtype=values.dtype, device=values.device)
        return out.index_add(0, stats.unit_ids, w * values)

    def forget_plus_retain(self, stats: SeqStats, n_units: int, forget_values):
        """Per unit: ``forget_weight * forget_values`` on its forget sequence plus
        ``retain_weight * nll`` on its retain row (the settings of that name)."""
        import torch

        values = torch.where(self.role_mask(stats, "forget"),
                             self.cfg.forget_weight * forget_values,
                             self.cfg.retain_weight * stats.mean_nll)
        return self.weighted_sum(stats, [1.0] * len(stats.roles), n_units, values)

    @staticmethod
    def mean_weights(stats: SeqStats, role: str, weight: float) -> list[float]:
        """Per sequence: ``weight / n`` for the ``n`` sequences of ``role`` in its unit (a
        mean over them), 0 for the other roles."""
        units = stats.unit_ids.tolist()
        counts: dict[int, int] = {}
        for u, r in zip(units, stats.roles):
            counts[u] = counts.get(u, 0) + (r == role)
        return [weight / counts[u] if r == role else 0.0 for u, r in zip(units, stats.roles)]

    @staticmethod
    def role_mask(stats: SeqStats, *roles: str):
        import torch

        return torch.tensor([r in roles for r in stats.roles], device=stats.mean_nll.device)


def token_nll(stats: SeqStats):
    """The NLL of each scored token ``[N]`` (in ``stats.token_rows`` order), from the kept
    logits: methods using it set ``needs_logits = True``."""
    import torch.nn.functional as F

    return F.cross_entropy(stats.token_logits.float(), stats.token_targets, reduction="none")


def sequence_mean(stats: SeqStats, values, where=None):
    """Per sequence ``[n_seq]``: the mean of a per-token value ``values`` ``[N]`` over its
    scored tokens (its answer), or over those where ``where`` ``[N]`` holds; 0 for a sequence
    without any."""
    import torch

    keep = torch.ones_like(values) if where is None else where.to(values.dtype)
    total = torch.zeros(len(stats.roles), dtype=values.dtype, device=values.device)
    count = torch.zeros_like(total)
    total = total.index_add(0, stats.token_rows, values * keep)
    count = count.index_add(0, stats.token_rows, keep)
    return total / count.clamp(min=1)


def token_positions(stats: SeqStats):
    """Each scored token's place in its own answer ``[N]``: 0 for the first answer token
    (the scored tokens are in row-major order)."""
    import torch

    rows = stats.token_rows
    counts = torch.bincount(rows, minlength=len(stats.roles))
    starts = torch.cumsum(counts, 0) - counts
    return torch.arange(len(rows), device=rows.device) - starts[rows]


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


def random_answers(data: MethodData, i: int, n: int) -> list[str]:
    """``n`` answers (QA) or continuations (text) of distinct retain rows for forget row
    ``i``: the "random responses" of LLMU and Mismatch. Drawn once per row from a generator
    seeded by the row index (the same on every process and every run), never the row's own
    answer text."""
    import random

    if not data.retain:
        raise ValueError("this method needs retain data (its random answers come from the "
                         "retain rows)")
    key = "answer" if data.kind == "qa" else "continuation"
    own = data.forget[i].get(key)
    pool = list(dict.fromkeys(r[key] for r in data.retain if r.get(key) and r[key] != own))
    if not pool:
        raise ValueError("the retain rows have no answer that differs from the forget answers")
    rng = random.Random(1_000_003 * (i + 1))
    return rng.sample(pool, min(n, len(pool)))


def random_answer_units(data: MethodData, enc: Encoder, n: int) -> list[Unit]:
    """One unit per forget row: its forget answer, ``n`` random answers to its prompt (role
    "normal", :func:`random_answers`) and its paired retain row (LLMU, Mismatch)."""
    units = []
    for i, row in enumerate(data.forget):
        rand = random_answers(data, i, n)
        units.append(Unit(i, [enc.row(row, data.kind, role="forget", forget_index=i)] +
                          [enc.row(row, data.kind, answer=t, role="normal", forget_index=i,
                                   k=j + 1) for j, t in enumerate(rand)] +
                          [paired_retain(data, enc, i)]))
    return units


def flatten(units: list[Unit]) -> tuple[list[Sequence], list[int]]:
    """All sequences of ``units`` and, for each, the position of its unit."""
    seqs, ids = [], []
    for j, u in enumerate(units):
        seqs += u.seqs
        ids += [j] * len(u.seqs)
    return seqs, ids
